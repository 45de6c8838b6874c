package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// purge removes every job of the bench queue (and nothing else).
func purge(ctx context.Context, s store.QueueStore) error {
	if _, err := s.QueuePurge(ctx, Queue); err != nil {
		return fmt.Errorf("purge bench queue: %w", err)
	}
	return nil
}

// throughput inserts a backlog of cfg.Jobs no-op jobs, then works it.
func throughput(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	figs, _, err := workBacklog(ctx, cfg, w, backlogRun{name: "throughput"})
	return figs, err
}

// backlogRun says what workBacklog measures.
type backlogRun struct {
	name       string  // the figures are name.insert and name.work
	partitions int     // partition_keys the jobs go to round-robin; 0: none
	hook       jobHook // called around each job; nil: none
}

// workBacklog inserts a backlog of cfg.Jobs no-op jobs, works it, and
// reports both rates under run.name; it returns the work rate too.
func workBacklog(ctx context.Context, cfg Config, w io.Writer, run backlogRun) ([]Figure, float64, error) {
	took, err := insertBacklog(ctx, cfg.Store, cfg.Jobs, run.partitions)
	if err != nil {
		return nil, 0, err
	}
	figs := []Figure{report(w, Figure{run.name + ".insert", float64(cfg.Jobs) / took.Seconds(), "jobs/s"})}
	start := time.Now()
	wk, err := startWorker(ctx, cfg, run.hook)
	if err != nil {
		return figs, 0, err
	}
	err = waitDone(ctx, cfg.Store, wk, int64(cfg.Jobs))
	took = time.Since(start)
	if cerr := wk.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return figs, 0, err
	}
	rate := float64(cfg.Jobs) / took.Seconds()
	return append(figs, report(w, Figure{run.name + ".work", rate, "jobs/s"})), rate, nil
}

// vacuumer is a store that can vacuum its tables the way a database's
// own maintenance would.
type vacuumer interface {
	Vacuum(ctx context.Context) error
}

// vacuum measures the cliff a drained, vacuumed queue used to meet: a
// backlog worked, the queue purged, every jobd table vacuumed (so that
// the statistics say "empty" while the table keeps its pages), then the
// same backlog again. after_vs_fresh is the second work rate as a
// percentage of the first.
func vacuum(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	v, ok := cfg.Store.(vacuumer)
	if !ok {
		return nil, fmt.Errorf("this store cannot vacuum its tables")
	}
	figs, fresh, err := workBacklog(ctx, cfg, w, backlogRun{name: "vacuum.fresh"})
	if err != nil {
		return figs, err
	}
	if err := purge(ctx, cfg.Store); err != nil {
		return figs, err
	}
	start := time.Now()
	if err := v.Vacuum(ctx); err != nil {
		return figs, err
	}
	figs = append(figs, report(w, Figure{"vacuum.took", time.Since(start).Seconds(), "s"}))
	more, after, err := workBacklog(ctx, cfg, w, backlogRun{name: "vacuum.after"})
	figs = append(figs, more...)
	if err != nil {
		return figs, err
	}
	return append(figs, report(w, Figure{"vacuum.after_vs_fresh", 100 * after / fresh, "%"})), nil
}

// continuous inserts and works at once for cfg.Duration and reports the
// jobs worked per second.
func continuous(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	wk, err := startWorker(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	wait := insertLoop(runCtx, cfg, wk)
	start := time.Now()
	startDone := wk.done.Load()
	<-runCtx.Done()
	worked := wk.done.Load() - startDone
	took := time.Since(start)
	insertErr := wait()
	if err := wk.close(); err != nil {
		return nil, err
	}
	if insertErr != nil {
		return nil, insertErr
	}
	return []Figure{report(w, Figure{"continuous.work", float64(worked) / took.Seconds(), "jobs/s"})}, nil
}

// insertLoop inserts batches of no-op jobs until ctx ends, keeping the
// backlog bounded so that inserting never runs far ahead of working. The
// returned function waits for the inserters and returns their error.
func insertLoop(ctx context.Context, cfg Config, wk *worker) (wait func() error) {
	const batch = 200
	var inserted atomic.Int64
	var wg sync.WaitGroup
	var insertErr error
	var once sync.Once
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if inserted.Load()-wk.done.Load() > int64(4*cfg.Concurrency+2000) {
					time.Sleep(time.Millisecond)
					continue
				}
				if _, err := cfg.Store.JobInsertMany(ctx, noopParams(0, batch, 0)); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { insertErr = err })
					}
					return
				}
				inserted.Add(batch)
			}
		})
	}
	return func() error {
		wg.Wait()
		return insertErr
	}
}

// latency inserts single jobs at a steady rate while idle workers wait,
// and reports enqueue-to-start percentiles.
func latency(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	n := int(cfg.Duration.Seconds() * float64(cfg.Rate))
	n = max(min(n, 5000), 50)
	sent := make([]time.Time, n)
	got := make([]time.Time, n)
	var mu sync.Mutex
	wk, err := startWorker(ctx, cfg, func(j *engine.Job[json.RawMessage]) func() {
		now := time.Now()
		var a struct{ Seq int }
		if json.Unmarshal(j.Args, &a) == nil && a.Seq >= 0 && a.Seq < n {
			mu.Lock()
			got[a.Seq] = now
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Let the workers go idle (listening) before the first insert.
	time.Sleep(500 * time.Millisecond)
	interval := time.Second / time.Duration(cfg.Rate)
	tick := time.NewTicker(interval)
	for i := range n {
		<-tick.C
		args, _ := json.Marshal(map[string]int{"seq": i})
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if _, err := cfg.Store.JobInsertMany(ctx, []job.InsertParams{{Queue: Queue, Kind: kind, Args: args}}); err != nil {
			tick.Stop()
			_ = wk.close()
			return nil, err
		}
	}
	tick.Stop()
	err = waitDone(ctx, cfg.Store, wk, int64(n))
	if cerr := wk.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		if !got[i].IsZero() {
			lat = append(lat, got[i].Sub(sent[i]))
		}
	}
	sortDurations(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return []Figure{
		report(w, Figure{"latency.p50", ms(percentile(lat, 0.50)), "ms"}),
		report(w, Figure{"latency.p95", ms(percentile(lat, 0.95)), "ms"}),
		report(w, Figure{"latency.p99", ms(percentile(lat, 0.99)), "ms"}),
	}, nil
}

// backlog measures how fast the first 10 000 jobs are worked when they sit
// in a backlog of 10 000 and of 1 000 000 queued jobs.
func backlog(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	const sample = 10_000
	var figs []Figure
	for _, size := range []int{10_000, 1_000_000} {
		if err := purge(ctx, cfg.Store); err != nil {
			return figs, err
		}
		if _, err := insertBacklog(ctx, cfg.Store, size, 0); err != nil {
			return figs, err
		}
		start := time.Now()
		wk, err := startWorker(ctx, cfg, nil)
		if err != nil {
			return figs, err
		}
		for wk.done.Load() < sample && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(start)
		if err := wk.close(); err != nil {
			return figs, err
		}
		figs = append(figs, report(w, Figure{fmt.Sprintf("backlog.%d", size), sample / took.Seconds(), "jobs/s"}))
	}
	ratio := figs[1].Value / figs[0].Value
	return append(figs, report(w, Figure{"backlog.ratio", 100 * ratio, "%"})), nil
}
