package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// part is a task's result in these tests.
type part struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// waitWorkflow waits until workflow id is in state.
func waitWorkflow(t *testing.T, s store.Store, id uuid.UUID, state job.WorkflowState) *store.WorkflowDetail {
	t.Helper()
	var d *store.WorkflowDetail
	storewatch.Until(t, s, fmt.Sprintf("workflow %s %s", id, state), func() bool {
		var err error
		if d, err = s.WorkflowGet(context.Background(), id); err != nil {
			t.Fatalf("WorkflowGet: %v", err)
		}
		if d.State.Final() && d.State != state {
			t.Fatalf("workflow %s ended %s, want %s", id, d.State, state)
		}
		return d.State == state
	})
	return d
}

// taskOf returns the task ref of d.
func taskOf(t *testing.T, d *store.WorkflowDetail, ref string) *job.Job {
	t.Helper()
	for _, j := range d.Tasks {
		if j.Ref == ref {
			return j
		}
	}
	t.Fatalf("workflow %s has no task %q", d.ID, ref)
	return nil
}

func TestWorkflowDiamond(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(4)})
		engine.Register(e, "make", func(ctx context.Context, j *engine.Job[part]) (part, error) {
			n := j.Args.N
			for ref := range j.Inputs {
				in, err := engine.Input[part](j, ref)
				if err != nil {
					return part{}, err
				}
				n += in.N
			}
			return part{Name: j.Ref, N: n}, nil
		})
		var sawD atomic.Value
		engine.Register(e, "join", func(ctx context.Context, j *engine.Job[struct{}]) (part, error) {
			b, errB := engine.Input[part](j, "b")
			c, errC := engine.Input[part](j, "c")
			if err := errors.Join(errB, errC); err != nil {
				return part{}, err
			}
			sawD.Store(fmt.Sprintf("%s=%d %s=%d", b.Name, b.N, c.Name, c.N))
			return part{Name: "d", N: b.N + c.N}, nil
		})
		start(t, e)
		wf := engine.NewWorkflow("diamond")
		a := wf.Task("a", job.InsertParams{Kind: "make", Args: engine.Args(part{N: 1})})
		b := wf.Task("b", job.InsertParams{Kind: "make", Args: engine.Args(part{N: 10})}, engine.DependsOn(a))
		c := wf.Task("c", job.InsertParams{Kind: "make", Args: engine.Args(part{N: 100})}, engine.DependsOn(a))
		wf.Task("d", job.InsertParams{Kind: "join"}, engine.DependsOn(b, c))
		res, err := e.SubmitWorkflow(context.Background(), wf)
		if err != nil {
			t.Fatal(err)
		}
		d := waitWorkflow(t, s, res.Workflow.ID, job.WorkflowSucceeded)
		if got := sawD.Load(); got != "b=11 c=101" {
			t.Fatalf("D saw %v, want b's and c's results", got)
		}
		if !jsonEqual(taskOf(t, d, "d").Result, `{"name":"d","n":112}`) {
			t.Fatalf("d's result %s", taskOf(t, d, "d").Result)
		}
		if kinds := eventKinds(t, s, taskOf(t, d, "d").ID); !slices.Equal(kinds, []job.EventKind{job.EventWaiting,
			job.EventReleased, job.EventClaimed, job.EventSucceeded}) {
			t.Fatalf("journal of d: %v", kinds)
		}
	})
}

func TestWorkflowFanOutFanIn(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(16)})
		engine.Register(e, "part", func(ctx context.Context, j *engine.Job[part]) (part, error) {
			return part{Name: j.Ref, N: j.Args.N}, nil
		})
		var collected atomic.Int64
		engine.Register(e, "collect", func(ctx context.Context, j *engine.Job[struct{}]) (engine.NoResult, error) {
			sum := 0
			for ref := range j.Inputs {
				p, err := engine.Input[part](j, ref)
				if err != nil {
					return engine.NoResult{}, err
				}
				if p.Name != ref {
					return engine.NoResult{}, fmt.Errorf("input %q says it is %q", ref, p.Name)
				}
				sum += p.N
			}
			collected.Store(int64(len(j.Inputs))<<32 | int64(sum))
			return engine.NoResult{}, nil
		})
		start(t, e)
		const n = 500
		wf := engine.NewWorkflow("fan")
		root := wf.Task("root", job.InsertParams{Kind: "part"})
		parts := make([]engine.Task, n)
		want := 0
		for i := range parts {
			parts[i] = wf.Task(fmt.Sprintf("part-%03d", i), job.InsertParams{Kind: "part", Args: engine.Args(part{N: i})}, engine.DependsOn(root))
			want += i
		}
		wf.Task("collect", job.InsertParams{Kind: "collect"}, engine.DependsOn(parts...))
		res, err := e.SubmitWorkflow(context.Background(), wf)
		if err != nil {
			t.Fatal(err)
		}
		d := waitWorkflow(t, s, res.Workflow.ID, job.WorkflowSucceeded)
		if got := collected.Load(); got != int64(n)<<32|int64(want) {
			t.Fatalf("fan-in collected %d inputs summing %d, want %d summing %d", got>>32, got&(1<<32-1), n, want)
		}
		if d.Succeeded != n+2 {
			t.Fatalf("%d tasks succeeded, want %d", d.Succeeded, n+2)
		}
	})
}

func TestWorkflowFailureAndRetry(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(4)})
		var ran runCounter
		var failEncode atomic.Bool
		failEncode.Store(true)
		engine.Register(e, "step", func(ctx context.Context, j *engine.Job[struct{}]) (part, error) {
			ran.add(j.Ref)
			if j.Ref == "encode" && failEncode.Load() {
				return part{}, engine.Permanent(errors.New("codec missing"))
			}
			return part{Name: j.Ref}, nil
		})
		var cleanupSaw atomic.Value
		engine.Register(e, "cleanup", func(ctx context.Context, j *engine.Job[struct{}]) (engine.NoResult, error) {
			in := j.Inputs["encode"]
			cleanupSaw.Store(string(in.State) + ": " + in.Error)
			return engine.NoResult{}, nil
		})
		start(t, e)
		wf := engine.NewWorkflow("transcode")
		download := wf.Task("download", job.InsertParams{Kind: "step"})
		encode := wf.Task("encode", job.InsertParams{Kind: "step"}, engine.DependsOn(download))
		wf.Task("thumbs", job.InsertParams{Kind: "step"}, engine.DependsOn(download))
		publish := wf.Task("publish", job.InsertParams{Kind: "step"}, engine.DependsOn(encode))
		wf.Task("notify", job.InsertParams{Kind: "step"}, engine.DependsOn(publish))
		wf.Task("cleanup", job.InsertParams{Kind: "cleanup"}, engine.DependsOn(encode), engine.RunOnAny())
		res, err := e.SubmitWorkflow(context.Background(), wf)
		if err != nil {
			t.Fatal(err)
		}
		d := waitWorkflow(t, s, res.Workflow.ID, job.WorkflowFailed)
		for ref, want := range map[string]job.State{"download": job.StateSucceeded, "encode": job.StateFailed,
			"thumbs": job.StateSucceeded, "publish": job.StateCanceled, "notify": job.StateCanceled, "cleanup": job.StateSucceeded} {
			if got := taskOf(t, d, ref); got.State != want {
				t.Errorf("task %q: %s (%q), want %s", ref, got.State, got.LastError, want)
			}
		}
		if got := taskOf(t, d, "publish").LastError; got != `dependency "encode" failed` {
			t.Errorf("publish's error %q", got)
		}
		if got := cleanupSaw.Load(); got != "failed: codec missing" {
			t.Errorf("cleanup saw %v", got)
		}
		// Retry the failed task: the workflow resumes where it stopped.
		failEncode.Store(false)
		if _, err := s.JobRetry(context.Background(), taskOf(t, d, "encode").ID); err != nil {
			t.Fatal(err)
		}
		d = waitWorkflow(t, s, res.Workflow.ID, job.WorkflowSucceeded)
		if got := ran.counts(); got != "download:1 encode:2 notify:1 publish:1 thumbs:1" {
			t.Fatalf("runs %s: a task that succeeded ran again, or one that should have did not", got)
		}
		if d.Succeeded != 6 {
			t.Fatalf("%d tasks succeeded, want 6", d.Succeeded)
		}
	})
}

func TestWorkflowCancelStopsRunningTask(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(2)})
		started := make(chan struct{})
		engine.Register(e, "block", func(ctx context.Context, j *engine.Job[struct{}]) (engine.NoResult, error) {
			close(started)
			<-ctx.Done()
			return engine.NoResult{}, context.Cause(ctx)
		})
		start(t, e)
		wf := engine.NewWorkflow("w")
		b := wf.Task("block", job.InsertParams{Kind: "block"})
		wf.Task("after", job.InsertParams{Kind: "noop"}, engine.DependsOn(b))
		res, err := e.SubmitWorkflow(context.Background(), wf)
		if err != nil {
			t.Fatal(err)
		}
		<-started
		if _, err := s.WorkflowCancel(context.Background(), res.Workflow.ID); err != nil {
			t.Fatal(err)
		}
		d := waitWorkflow(t, s, res.Workflow.ID, job.WorkflowCanceled)
		if d.Canceled != 2 {
			t.Fatalf("%d tasks canceled, want 2", d.Canceled)
		}
	})
}

func TestWorkflowBuilderMistakes(t *testing.T) {
	s := openStore(t, "sqlite")
	e := newEngine(t, s, newLogs(t), engine.Config{})
	other := engine.NewWorkflow("other").Task("x", job.InsertParams{Kind: "noop"})
	for name, build := range map[string]func(*engine.Workflow){
		"a ref twice": func(w *engine.Workflow) {
			w.Task("a", job.InsertParams{Kind: "noop"})
			w.Task("a", job.InsertParams{Kind: "noop"})
		},
		"a task of another workflow": func(w *engine.Workflow) {
			w.Task("a", job.InsertParams{Kind: "noop"}, engine.DependsOn(other))
		},
	} {
		w := engine.NewWorkflow("w")
		build(w)
		if _, err := e.SubmitWorkflow(context.Background(), w); err == nil {
			t.Errorf("%s: submitted", name)
		}
	}
	// The store's refusals name the task.
	w := engine.NewWorkflow("w")
	w.Task("a", job.InsertParams{})
	_, err := e.SubmitWorkflow(context.Background(), w)
	var ve *job.ValidationError
	if !errors.As(err, &ve) || ve.Field != "tasks[0].kind" {
		t.Fatalf("a task without a kind: %v, want tasks[0].kind", err)
	}
	if l, err := s.WorkflowList(context.Background(), store.WorkflowListParams{}); err != nil || l.Total != 0 {
		t.Fatalf("refused workflows wrote %+v %v", l, err)
	}
}

// runCounter counts runs by ref.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (r *runCounter) add(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runs == nil {
		r.runs = make(map[string]int)
	}
	r.runs[ref]++
}

func (r *runCounter) counts() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for ref, n := range r.runs {
		out = append(out, fmt.Sprintf("%s:%d", ref, n))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
