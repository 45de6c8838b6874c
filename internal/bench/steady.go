package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"
)

// steadyRetention is how long the steady mode keeps finished bench jobs.
const steadyRetention = 30 * time.Second

// sizer is a store that can tell how big its tables are.
type sizer interface {
	TableSizes(ctx context.Context) (map[string]int64, error)
}

// steady inserts and works at once for cfg.Duration (ten minutes is the
// usual run) while pruning the bench queue's finished jobs older than
// steadyRetention, and prints each minute that minute's jobs/s and the
// tables' sizes; it reports the min, median and max of the per-minute
// rates after the first minute. Sizes that
// level off mean vacuum keeps up; a size that keeps growing is bloat.
func steady(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	sz, ok := cfg.Store.(sizer)
	if !ok {
		return nil, fmt.Errorf("this store cannot report its table sizes")
	}
	wk, err := startWorker(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	wait := insertLoop(runCtx, cfg, wk)
	pruned := make(chan error, 1)
	go func() { pruned <- pruneLoop(runCtx, cfg) }()

	start := time.Now()
	var first, last, workedBefore int64
	var perMinute []float64
	minuteStart := start
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for runCtx.Err() == nil {
		select {
		case <-runCtx.Done():
		case now := <-tick.C:
			worked := wk.done.Load()
			rate := float64(worked-workedBefore) / now.Sub(minuteStart).Seconds()
			workedBefore, minuteStart = worked, now
			perMinute = append(perMinute, rate)
			fmt.Fprintf(w, "%6s  %8.0f jobs/s", now.Sub(start).Round(time.Second), rate)
			total, err := printSizes(ctx, sz, w)
			if err != nil {
				cancel()
				break
			}
			if first == 0 {
				first = total
			}
			last = total
		}
	}
	worked := wk.done.Load()
	took := time.Since(start)
	insertErr := wait()
	pruneErr := <-pruned
	if err := wk.close(); err != nil {
		return nil, err
	}
	if insertErr != nil {
		return nil, insertErr
	}
	if pruneErr != nil {
		return nil, pruneErr
	}
	figs := []Figure{report(w, Figure{"steady.work", float64(worked) / took.Seconds(), "jobs/s"})}
	// The minutes after the first (the tables and caches warming up).
	if len(perMinute) > 1 {
		later := slices.Clone(perMinute[1:])
		slices.Sort(later)
		figs = append(figs,
			report(w, Figure{"steady.minute.min", later[0], "jobs/s"}),
			report(w, Figure{"steady.minute.median", later[len(later)/2], "jobs/s"}),
			report(w, Figure{"steady.minute.max", later[len(later)-1], "jobs/s"}))
	}
	if first > 0 {
		figs = append(figs,
			report(w, Figure{"steady.size.after_1m", float64(first) / (1 << 20), "MiB"}),
			report(w, Figure{"steady.size.end", float64(last) / (1 << 20), "MiB"}))
	}
	return figs, nil
}

// pruneLoop deletes the bench queue's finished jobs older than
// steadyRetention every few seconds until ctx ends.
func pruneLoop(ctx context.Context, cfg Config) error {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for {
			n, err := cfg.Store.JobPruneQueue(ctx, Queue, time.Now().Add(-steadyRetention), 10_000)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("prune: %w", err)
			}
			if n < 10_000 {
				break
			}
		}
	}
}

// printSizes ends a line with the table sizes and returns their total.
func printSizes(ctx context.Context, sz sizer, w io.Writer) (int64, error) {
	sizes, err := sz.TableSizes(ctx)
	if err != nil {
		fmt.Fprintln(w)
		return 0, err
	}
	var total int64
	for _, name := range sortedKeys(sizes) {
		fmt.Fprintf(w, "  %s %.1f MiB", name, float64(sizes[name])/(1<<20))
		total += sizes[name]
	}
	fmt.Fprintln(w)
	return total, nil
}
