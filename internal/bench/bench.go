// Package bench measures jobd on a real store: backlog throughput,
// continuous insert-and-work, enqueue-to-start latency and the claim's
// sensitivity to backlog size. It works in its own queue and removes its
// jobs afterwards unless told to keep them.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// Queue is the queue every benchmark job goes to.
const Queue = "bench"

const kind = "bench-noop"

// Modes jobd bench runs for "all".
var Modes = []string{"throughput", "continuous", "latency", "backlog"}

// ModeSteady is run only when asked for by name: a long insert-and-work
// run that prints the minute's throughput and the table sizes each minute.
const ModeSteady = "steady"

// ModeVacuum is run only when asked for by name: a backlog, a vacuum of
// every jobd table, the backlog again.
const ModeVacuum = "vacuum"

// Named are the modes run only when asked for by name, not by "all".
var Named = []string{ModeSteady, ModeVacuum, ModeProcess, ModeFlow, ModeNodes, ModeRemote, ModeWorkflow}

// Config says what to measure.
type Config struct {
	Store       store.Store // migrated
	Mode        string      // one of Modes, or "all"
	Jobs        int         // backlog size for throughput (default 200 000)
	Duration    time.Duration
	Concurrency int // worker goroutines (default 200)
	Rate        int // latency mode: inserts per second (default 100)
	// Partitions is how many partition_keys the flow mode spreads its
	// backlog over, round-robin (default 1000).
	Partitions int
	// PartitionLimit is the flow mode's partition_limit (default 2).
	PartitionLimit int
	// GlobalLimit is the flow mode's global_limit; 0 (the default) skips
	// the flow mode's global-limit step.
	GlobalLimit int
	// Hold is how long the flow mode's handler holds each job before it
	// returns; 0 (the default): a no-op. With no-op jobs the handlers of
	// one partition seldom overlap, whatever the limits.
	Hold   time.Duration
	Keep   bool // leave the bench queue's jobs in place
	Logger *slog.Logger
	// Observer and Tracer are the engine's (metrics and tracing on, to
	// measure their cost); nil: off.
	Observer observe.Jobs
	Tracer   observe.Tracer
	// Jobd is the jobd binary the nodes mode runs as `jobd serve`, and
	// Database the URL its nodes are given (the Store's database).
	Jobd, Database string
	// Nodes are the node counts the nodes mode measures, in turn
	// (default DefaultNodes); NodeConcurrency each node's worker pool
	// (default DefaultNodeConcurrency); Runs how many times it measures
	// each count (default 1), reporting the min, median and max (the
	// remote mode's runs too). The workflow mode runs its two measures
	// Runs times in turn too.
	Nodes           []int
	NodeConcurrency int
	Runs            int
	// Serve starts the whole server the remote mode's SDK workers call
	// (jobd bench passes one that runs jobd.NewServer in its process).
	Serve Server
	// RemoteWorkers and RemoteSlots are the remote mode's SDK workers and
	// each one's concurrency (defaults DefaultRemoteWorkers,
	// DefaultRemoteSlots).
	RemoteWorkers, RemoteSlots int
}

// Figure is one measured number.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Run measures what cfg.Mode asks and returns the figures, also written
// to progress as they come (nil for none).
func Run(ctx context.Context, cfg Config, progress io.Writer) ([]Figure, error) {
	cfg = withDefaults(cfg)
	if progress == nil {
		progress = io.Discard
	}
	var all []Figure
	for _, mode := range append(slices.Clone(Modes), Named...) {
		if cfg.Mode != mode && (cfg.Mode != "all" || slices.Contains(Named, mode)) {
			continue
		}
		if err := purge(ctx, cfg.Store); err != nil {
			return all, err
		}
		figs, err := runMode(ctx, cfg, mode, progress)
		all = append(all, figs...)
		if err != nil {
			return all, fmt.Errorf("%s: %w", mode, err)
		}
	}
	if !cfg.Keep {
		if err := purge(ctx, cfg.Store); err != nil {
			return all, err
		}
	}
	return all, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Mode == "" {
		cfg.Mode = "all"
	}
	if cfg.Jobs <= 0 {
		cfg.Jobs = 200_000
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 30 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1000
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 100
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 1000
	}
	if cfg.PartitionLimit <= 0 {
		cfg.PartitionLimit = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if len(cfg.Nodes) == 0 {
		cfg.Nodes = DefaultNodes
	}
	if cfg.NodeConcurrency <= 0 {
		cfg.NodeConcurrency = DefaultNodeConcurrency
	}
	if cfg.Runs <= 0 {
		cfg.Runs = 1
	}
	if cfg.RemoteWorkers <= 0 {
		cfg.RemoteWorkers = DefaultRemoteWorkers
	}
	if cfg.RemoteSlots <= 0 {
		cfg.RemoteSlots = DefaultRemoteSlots
	}
	return cfg
}

// ValidMode reports whether mode is "all", one of Modes or one run only
// by name (Named).
func ValidMode(mode string) bool {
	return mode == "all" || slices.Contains(Modes, mode) || slices.Contains(Named, mode)
}

func runMode(ctx context.Context, cfg Config, mode string, w io.Writer) ([]Figure, error) {
	switch mode {
	case "throughput":
		return throughput(ctx, cfg, w)
	case "continuous":
		return continuous(ctx, cfg, w)
	case "latency":
		return latency(ctx, cfg, w)
	case "backlog":
		return backlog(ctx, cfg, w)
	case ModeSteady:
		return steady(ctx, cfg, w)
	case ModeVacuum:
		return vacuum(ctx, cfg, w)
	case ModeProcess:
		return processBench(ctx, cfg, w)
	case ModeFlow:
		return flowBench(ctx, cfg, w)
	case ModeNodes:
		return nodesBench(ctx, cfg, w)
	case ModeWorkflow:
		return workflowBench(ctx, cfg, w)
	case ModeRemote:
		return remoteBench(ctx, cfg, w)
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}

func report(w io.Writer, f Figure) Figure {
	fmt.Fprintf(w, "%-46s %12.1f %s\n", f.Name, f.Value, f.Unit)
	return f
}

// jobHook is called by the bench worker's no-op handler as each job
// starts; the function it returns (nil for none) is called as the handler
// returns.
type jobHook func(j *engine.Job[json.RawMessage]) (end func())

// worker runs an engine on the bench queue whose handler calls its
// jobHook around each job; stop it with close.
type worker struct {
	done    atomic.Int64
	stop    context.CancelFunc
	stopped chan error
}

func startWorker(ctx context.Context, cfg Config, hook jobHook) (*worker, error) {
	eng, err := engine.New(engine.Config{
		Store:    cfg.Store,
		Queues:   []engine.QueueConfig{{Queue: Queue, Concurrency: cfg.Concurrency}},
		Logger:   cfg.Logger,
		Node:     "bench",
		Observer: cfg.Observer,
		Tracer:   cfg.Tracer,
		// The bench never prunes other queues' jobs: it prunes its own.
		Retention: 100 * 365 * 24 * time.Hour,
	})
	if err != nil {
		return nil, err
	}
	w := &worker{stopped: make(chan error, 1)}
	engine.Register(eng, kind, func(ctx context.Context, j *engine.Job[json.RawMessage]) (struct{}, error) {
		if hook != nil {
			if end := hook(j); end != nil {
				defer end()
			}
		}
		w.done.Add(1)
		return struct{}{}, nil
	})
	runCtx, cancel := context.WithCancel(ctx)
	w.stop = cancel
	go func() { w.stopped <- eng.Run(runCtx) }()
	return w, nil
}

func (w *worker) close() error {
	w.stop()
	err := <-w.stopped
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// insertBacklog inserts n jobs in batches, spread over a few goroutines,
// round-robin over partitions partition_keys (none for 0), and returns
// how long it took.
func insertBacklog(ctx context.Context, s store.JobStore, n, partitions int) (time.Duration, error) {
	const batch = 1000
	const inserters = 4
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, inserters)
	for range inserters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := int(next.Add(batch)) - batch
				if from >= n {
					return
				}
				size := min(batch, n-from)
				if _, err := s.JobInsertMany(ctx, noopParams(from, size, partitions)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("insert backlog: %w", err)
	}
	return time.Since(start), nil
}

// noopParams are n no-op jobs, the from'th to the from+n-1'th of a
// backlog spread round-robin over partitions partition_keys ("p0", "p1"…;
// none for 0).
func noopParams(from, n, partitions int) []job.InsertParams {
	ps := make([]job.InsertParams, n)
	for i := range ps {
		ps[i] = job.InsertParams{Queue: Queue, Kind: kind}
		if partitions > 0 {
			ps[i].PartitionKey = partitionKey((from + i) % partitions)
		}
	}
	return ps
}

// partitionKey is the i'th partition_key of a bench backlog.
func partitionKey(i int) string { return "p" + strconv.Itoa(i) }

// waitDone waits until the worker has run n jobs and none of the bench
// queue's jobs are queued or running any more (their outcomes written).
func waitDone(ctx context.Context, s store.JobStore, w *worker, n int64) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if w.done.Load() >= n {
			left, err := s.JobList(ctx, store.ListParams{Queue: Queue, States: []job.State{job.StateQueued, job.StateRunning}})
			if err != nil {
				return err
			}
			if left.Total == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}
