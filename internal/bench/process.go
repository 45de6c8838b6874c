package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// ModeProcess is run only when asked for by name: calls/s of durable
// processes with an in-process counter processor.
const ModeProcess = "process"

// Sizes of the process mode.
const (
	processNamespace  = "bench"
	processHotCalls   = 2000 // calls of the one hot process
	processMany       = 1000 // processes the spread calls go to
	processPerEach    = 5    // calls per process in the spread run
	processSubmitters = 32   // goroutines submitting calls
)

// processBench measures calls/s of one hot process (processHotCalls calls
// submitted at once, run strictly one at a time) and of processMany
// processes (processPerEach calls each, run in parallel across them). A
// call's time covers its submission, the claim, the processor and the
// save of its changes.
func processBench(ctx context.Context, cfg Config, w io.Writer) (figs []Figure, err error) {
	var calls atomic.Int64
	counter := process.ProcessorFunc(func(ctx context.Context, req *process.Request) (*process.Response, error) {
		var st struct{ N int }
		if len(req.Process.AuxState) > 0 {
			if err := json.Unmarshal(req.Process.AuxState, &st); err != nil {
				return nil, err
			}
		}
		st.N++
		aux, _ := json.Marshal(st)
		calls.Add(1)
		return &process.Response{AuxState: aux}, nil
	})
	eng, err := engine.New(engine.Config{
		Store:     cfg.Store,
		Queues:    []engine.QueueConfig{{Queue: Queue, Concurrency: cfg.Concurrency}},
		Logger:    cfg.Logger,
		Node:      "bench",
		Retention: 100 * 365 * 24 * time.Hour,
	})
	if err != nil {
		return nil, err
	}
	r, err := process.New(cfg.Store, eng, Queue, []process.Namespace{{Name: processNamespace, Processor: counter}})
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- eng.Run(runCtx) }()
	defer func() {
		stop()
		if rerr := <-stopped; rerr != nil && !errors.Is(rerr, context.Canceled) && err == nil {
			err = rerr
		}
		if !cfg.Keep {
			if derr := deleteProcesses(context.WithoutCancel(ctx), cfg.Store); derr != nil && err == nil {
				err = derr
			}
		}
	}()
	if err := deleteProcesses(ctx, cfg.Store); err != nil {
		return nil, err
	}

	ids := make([]string, processMany)
	for i := range ids {
		ids[i] = "p" + strconv.Itoa(i)
	}
	// Create the processes first: inits are not measured.
	if _, err := submitCalls(ctx, r, &calls, append([]string{"hot"}, ids...), process.TaskInit, 1); err != nil {
		return nil, err
	}
	took, err := submitCalls(ctx, r, &calls, []string{"hot"}, process.TaskCall, processHotCalls)
	if err != nil {
		return nil, err
	}
	figs = append(figs, report(w, Figure{"process.hot", processHotCalls / took.Seconds(), "calls/s"}))
	took, err = submitCalls(ctx, r, &calls, ids, process.TaskCall, processPerEach)
	if err != nil {
		return figs, err
	}
	figs = append(figs, report(w, Figure{"process.spread_1000", float64(processMany*processPerEach) / took.Seconds(), "calls/s"}))
	return figs, nil
}

// submitCalls submits each task of each of ids (per times each,
// round-robin) from a few goroutines and waits until the processor has
// seen them all; it returns how long that took.
func submitCalls(ctx context.Context, r *process.Runner, calls *atomic.Int64, ids []string, task process.Task, per int) (time.Duration, error) {
	n := len(ids) * per
	target := calls.Load() + int64(n)
	start := time.Now()
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		subErr  error
	)
	for range processSubmitters {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && ctx.Err() == nil; i = next.Add(1) - 1 {
				if _, err := r.Submit(ctx, processNamespace, ids[int(i)%len(ids)], task, nil, ""); err != nil {
					errOnce.Do(func() { subErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if subErr != nil {
		return 0, subErr
	}
	// The processor's count is the signal; the poll is bounded by ctx.
	for calls.Load() < target {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return time.Since(start), nil
}

// deleteProcesses removes every process of the bench namespace.
func deleteProcesses(ctx context.Context, s store.ProcessStore) error {
	for {
		ps, _, err := s.ProcessList(ctx, store.ProcessListParams{Namespace: processNamespace, Limit: 1000})
		if err != nil {
			return fmt.Errorf("list bench processes: %w", err)
		}
		if len(ps) == 0 {
			return nil
		}
		for _, p := range ps {
			if err := s.ProcessDelete(ctx, p.Namespace, p.ID); err != nil && !errors.Is(err, job.ErrNotFound) {
				return fmt.Errorf("delete bench process %s: %w", p.ID, err)
			}
		}
	}
}
