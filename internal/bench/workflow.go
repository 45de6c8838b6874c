package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// ModeWorkflow is run only when asked for by name: a workflow's fan-out
// and fan-in, beside the same jobs without dependencies.
const ModeWorkflow = "workflow"

// WorkflowWidth is the workflow mode's fan-out: one root, this many
// parallel no-op tasks that depend on it, and one fan-in task that
// depends on all of them.
const WorkflowWidth = 1000

// workflowBench runs, Config.Runs times in turn, the fan-out/fan-in
// workflow (WorkflowWidth + 2 no-op tasks) and the same number of no-op
// jobs without dependencies, on one bench worker, and reports the min,
// median and max of: the time from the workflow's submit to its fan-in's
// start (workflow.fan_in_start), and from the plain jobs' insert to the
// start of the last of them (workflow.plain_last_start) and to the end
// of the last (workflow.plain_done). Each workflow is deleted once it
// succeeded.
func workflowBench(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	var starts startWatch
	wk, err := startWorker(ctx, cfg, starts.hook)
	if err != nil {
		return nil, err
	}
	defer wk.close() //nolint:errcheck // the figures are taken; a close error says nothing of them
	var fanIn, plainStart, plainDone []time.Duration
	for run := range cfg.Runs {
		d, err := fanOutFanIn(ctx, cfg.Store, wk, &starts)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", run+1, err)
		}
		fanIn = append(fanIn, d)
		started, done, err := plainJobs(ctx, cfg.Store, wk, &starts)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", run+1, err)
		}
		plainStart, plainDone = append(plainStart, started), append(plainDone, done)
		fmt.Fprintf(w, "run %d: fan-in started after %s; plain jobs: last started after %s, done after %s\n",
			run+1, d.Round(time.Millisecond), started.Round(time.Millisecond), done.Round(time.Millisecond))
	}
	var figs []Figure
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"workflow.fan_in_start", fanIn}, {"workflow.plain_last_start", plainStart}, {"workflow.plain_done", plainDone}} {
		sortDurations(m.d)
		for _, q := range []struct {
			what string
			d    time.Duration
		}{{"min", m.d[0]}, {"median", m.d[len(m.d)/2]}, {"max", m.d[len(m.d)-1]}} {
			figs = append(figs, report(w, Figure{m.name + "." + q.what, float64(q.d) / float64(time.Millisecond), "ms"}))
		}
	}
	return figs, nil
}

// fanOutFanIn submits the fan-out/fan-in workflow and returns the time
// from the submit to its fan-in's start; it waits for the workflow to
// succeed and deletes it.
func fanOutFanIn(ctx context.Context, s store.Store, wk *worker, starts *startWatch) (time.Duration, error) {
	wf := engine.NewWorkflow("bench-fan")
	root := wf.Task("root", job.InsertParams{Queue: Queue, Kind: kind})
	parts := make([]engine.Task, WorkflowWidth)
	for i := range parts {
		parts[i] = wf.Task(fmt.Sprintf("part-%04d", i), job.InsertParams{Queue: Queue, Kind: kind}, engine.DependsOn(root))
	}
	wf.Task("fan-in", job.InsertParams{Queue: Queue, Kind: kind}, engine.DependsOn(parts...))
	fanIn := starts.expect(func(j *engine.Job[json.RawMessage]) bool { return j.Ref == "fan-in" }, 1)
	before := wk.done.Load()
	began := time.Now()
	res, err := s.WorkflowSubmit(ctx, store.WorkflowSubmitParams{WorkflowParams: wf.Params()})
	if err != nil {
		return 0, err
	}
	var at time.Time
	select {
	case at = <-fanIn:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err := waitDone(ctx, s, wk, before+WorkflowWidth+2); err != nil {
		return 0, err
	}
	d, err := s.WorkflowGet(ctx, res.Workflow.ID)
	if err != nil {
		return 0, err
	}
	if d.State != job.WorkflowSucceeded {
		return 0, fmt.Errorf("the bench workflow ended %s", d.State)
	}
	if _, err := s.WorkflowDelete(ctx, res.Workflow.ID); err != nil {
		return 0, err
	}
	return at.Sub(began), nil
}

// plainJobs inserts WorkflowWidth + 2 no-op jobs in one call and returns
// the time from the insert to the start of the last of them, and to the
// end of the last (their outcomes written).
func plainJobs(ctx context.Context, s store.Store, wk *worker, starts *startWatch) (started, done time.Duration, err error) {
	n := WorkflowWidth + 2
	all := starts.expect(func(j *engine.Job[json.RawMessage]) bool { return j.WorkflowID == [16]byte{} }, n)
	before := wk.done.Load()
	began := time.Now()
	if _, err := s.JobInsertMany(ctx, noopParams(0, n, 0)); err != nil {
		return 0, 0, err
	}
	select {
	case at := <-all:
		started = at.Sub(began)
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	if err := waitDone(ctx, s, wk, before+int64(n)); err != nil {
		return 0, 0, err
	}
	done = time.Since(began)
	return started, done, purge(ctx, s)
}

// startWatch tells when the n-th job a predicate picks has started.
type startWatch struct {
	mu    sync.Mutex
	match func(*engine.Job[json.RawMessage]) bool
	left  int
	at    chan time.Time
}

// expect arms the watch: the channel it returns receives the time the
// n-th job that match picks starts.
func (s *startWatch) expect(match func(*engine.Job[json.RawMessage]) bool, n int) <-chan time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.match, s.left, s.at = match, n, make(chan time.Time, 1)
	return s.at
}

// hook is the bench worker's jobHook: it counts the starts expect asked
// for.
func (s *startWatch) hook(j *engine.Job[json.RawMessage]) func() {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.match == nil || !s.match(j) {
		return nil
	}
	if s.left--; s.left == 0 {
		s.at <- now
		s.match = nil
	}
	return nil
}
