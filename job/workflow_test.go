package job

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// task is a task of kind "k" with ref and dependencies.
func task(ref string, deps ...string) TaskParams {
	return TaskParams{Ref: ref, DependsOn: deps, InsertParams: InsertParams{Kind: "k"}}
}

func TestWorkflowNormalizeOrder(t *testing.T) {
	// Submitted in an order where dependents come first.
	p := WorkflowParams{Name: "transcode", Tasks: []TaskParams{
		task("publish", "encode-720p", "encode-1080p", "thumbs"),
		task("encode-720p", "download"),
		task("thumbs", "download"),
		task("download"),
		task("encode-1080p", "download"),
	}}
	order, err := p.Normalize(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	pos := make(map[string]int)
	for n, i := range order {
		pos[p.Tasks[i].Ref] = n
	}
	if len(order) != 5 {
		t.Fatalf("order %v, want the 5 tasks", order)
	}
	for _, tk := range p.Tasks {
		for _, d := range tk.DependsOn {
			if pos[d] >= pos[tk.Ref] {
				t.Errorf("order %v puts %q before its dependency %q", order, tk.Ref, d)
			}
		}
		if tk.RunOn != RunOnSuccess || tk.Queue != DefaultQueue || tk.Priority == nil {
			t.Errorf("task %q: defaults not filled: run_on %q queue %q", tk.Ref, tk.RunOn, tk.Queue)
		}
	}
}

func TestWorkflowNormalizeRefused(t *testing.T) {
	big := WorkflowParams{Name: "w"}
	for i := range 4 {
		big.Tasks = append(big.Tasks, task(strings.Repeat("t", i+1)))
	}
	bad := func(mod func(*TaskParams)) []TaskParams {
		ts := []TaskParams{task("a"), task("b", "a")}
		mod(&ts[1])
		return ts
	}
	for _, tc := range []struct {
		name     string
		p        WorkflowParams
		maxTasks int
		field    string
		reason   string
	}{
		{"no name", WorkflowParams{Tasks: []TaskParams{task("a")}}, 0, "name", "required"},
		{"no tasks", WorkflowParams{Name: "w"}, 0, "tasks", "at least one"},
		{"too many tasks", big, 3, "tasks[3]", "over the limit of 3"},
		{"no ref", WorkflowParams{Name: "w", Tasks: []TaskParams{task("a"), task("")}}, 0, "tasks[1].ref", "required"},
		{"duplicate ref", WorkflowParams{Name: "w", Tasks: []TaskParams{task("a"), task("b"), task("a")}}, 0, "tasks[2].ref", "tasks[0]"},
		{"unknown ref", WorkflowParams{Name: "w", Tasks: []TaskParams{task("a"), task("b", "a", "zz")}}, 0, "tasks[1].depends_on", `"zz"`},
		{"itself", WorkflowParams{Name: "w", Tasks: []TaskParams{task("a", "a")}}, 0, "tasks[0].depends_on", "itself"},
		{"twice", WorkflowParams{Name: "w", Tasks: []TaskParams{task("a"), task("b", "a", "a")}}, 0, "tasks[1].depends_on", "twice"},
		{"cycle", WorkflowParams{Name: "w", Tasks: []TaskParams{task("root"), task("x", "root", "z"), task("y", "x"), task("z", "y"), task("after", "z")}},
			0, "tasks[1].depends_on", `"x" → "z" → "y" → "x"`},
		{"bad run_on", WorkflowParams{Name: "w", Tasks: bad(func(t *TaskParams) { t.RunOn = "always" })}, 0, "tasks[1].run_on", "always"},
		{"task key", WorkflowParams{Name: "w", Tasks: bad(func(t *TaskParams) { t.IdempotencyKey = "k" })}, 0, "tasks[1].idempotency_key", "workflow's"},
		{"task unique", WorkflowParams{Name: "w", Tasks: bad(func(t *TaskParams) { t.Unique = UniqueActive })}, 0, "tasks[1].unique", "workflow's"},
		{"task job", WorkflowParams{Name: "w", Tasks: bad(func(t *TaskParams) { t.Kind = "" })}, 0, "tasks[1].kind", "required"},
		{"task args", WorkflowParams{Name: "w", Tasks: bad(func(t *TaskParams) { t.Args = json.RawMessage(`[1]`) })}, 0, "tasks[1].args", "object"},
	} {
		_, err := tc.p.Normalize(0, tc.maxTasks)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field || !strings.Contains(ve.Reason, tc.reason) {
			t.Errorf("%s: %v, want field %s saying %q", tc.name, err, tc.field, tc.reason)
		}
	}
}

func TestWorkflowFingerprint(t *testing.T) {
	mk := func(tasks ...TaskParams) string {
		p := WorkflowParams{Name: "w", IdempotencyKey: "key", Tasks: tasks}
		if _, err := p.Normalize(0, 0); err != nil {
			t.Fatal(err)
		}
		return p.IdempotencyFingerprint
	}
	a := mk(task("a"), task("b"), task("c", "a", "b"))
	if b := mk(task("c", "b", "a"), task("b"), task("a")); b != a {
		t.Errorf("another order of tasks and dependencies: fingerprint %s, want %s", b, a)
	}
	if c := mk(task("a"), task("b"), task("c", "a")); c == a {
		t.Error("other dependencies: same fingerprint")
	}
	other := task("b")
	other.Args = json.RawMessage(`{"x":1}`)
	if d := mk(task("a"), other, task("c", "a", "b")); d == a {
		t.Error("other args: same fingerprint")
	}
}

func TestCheckCallerWorkflow(t *testing.T) {
	p := WorkflowParams{Name: "w", Tasks: []TaskParams{task("a"), task("b")}}
	p.Tasks[1].Queue = ReservedPrefix + "x"
	var ve *ValidationError
	if err := CheckCallerWorkflow(&p); !errors.As(err, &ve) || ve.Field != "tasks[1].queue" {
		t.Fatalf("reserved queue of a task: %v, want tasks[1].queue", err)
	}
}

func TestWorkflowStateOf(t *testing.T) {
	for _, tc := range []struct {
		tasks, s, f, c int
		want           WorkflowState
	}{
		{3, 2, 0, 0, WorkflowRunning},
		{3, 1, 1, 0, WorkflowRunning},
		{3, 3, 0, 0, WorkflowSucceeded},
		{3, 1, 1, 1, WorkflowFailed},
		{3, 2, 0, 1, WorkflowCanceled},
		{3, 0, 1, 2, WorkflowFailed},
	} {
		if got := WorkflowStateOf(tc.tasks, tc.s, tc.f, tc.c); got != tc.want {
			t.Errorf("%d tasks, %d/%d/%d final: %s, want %s", tc.tasks, tc.s, tc.f, tc.c, got, tc.want)
		}
	}
}

func TestDependenciesEnded(t *testing.T) {
	f := Facts{State: StateWaiting, WaitFor: WaitDependencies}
	failed := &Dependency{ID: uuid.New(), Ref: "encode", State: StateFailed}
	later := now.Add(delay)

	tr, err := DependenciesEnded(f, RunOnSuccess, 2, nil, now, now)
	if err != nil || tr.State != StateWaiting || tr.Task.Pending != 2 || tr.Task.WaitFor != WaitDependencies || len(tr.Events) != 0 {
		t.Fatalf("one of three ended: %+v %v, want waiting for 2, no journal entry", tr, err)
	}
	tr, err = DependenciesEnded(f, RunOnSuccess, 0, nil, later, now)
	if err != nil || tr.State != StateQueued || !tr.RunAt.Equal(later) || tr.Event.Kind != EventReleased || *tr.Task != (TaskChange{}) {
		t.Fatalf("last one ended: %+v %v, want released, due at its own later run_at", tr, err)
	}
	tr, err = DependenciesEnded(f, RunOnSuccess, 1, failed, now, now)
	if err != nil || tr.State != StateCanceled || tr.FinishedAt == nil || *tr.LastError != `dependency "encode" failed` ||
		tr.Event.Detail != *tr.LastError || tr.Task.CanceledBy != failed.ID {
		t.Fatalf("a dependency failed: %+v %v, want canceled naming it", tr, err)
	}
	tr, err = DependenciesEnded(f, RunOnAny, 0, failed, now, now)
	if err != nil || tr.State != StateQueued || !tr.RunAt.Equal(now) {
		t.Fatalf("run on any, a dependency failed, none pending: %+v %v, want released", tr, err)
	}
	if _, err := DependenciesEnded(Facts{State: StateQueued}, RunOnSuccess, 0, nil, now, now); !errors.Is(err, ErrWrongState) {
		t.Fatalf("a queued task: %v, want ErrWrongState", err)
	}
}

func TestRetryTaskAndRestore(t *testing.T) {
	failed := Facts{State: StateFailed, Attempt: 3, MaxAttempts: 3}
	tr, err := RetryTask(failed, RunOnSuccess, 0, nil, now)
	if err != nil || tr.State != StateQueued || tr.Attempt != 0 || tr.Event.Kind != EventManualRetry {
		t.Fatalf("retry, dependencies done: %+v %v", tr, err)
	}
	tr, err = RetryTask(failed, RunOnSuccess, 2, nil, now)
	if err != nil || tr.State != StateWaiting || tr.Task.Pending != 2 || tr.Task.WaitFor != WaitDependencies {
		t.Fatalf("retry, dependencies pending: %+v %v", tr, err)
	}
	blocked := &Dependency{Ref: "download", State: StateFailed}
	if _, err := RetryTask(failed, RunOnSuccess, 0, blocked, now); !errors.Is(err, ErrWrongState) || !strings.Contains(err.Error(), `"download"`) {
		t.Fatalf("retry behind a failed dependency: %v, want ErrWrongState naming it", err)
	}
	if _, err := RetryTask(failed, RunOnAny, 0, blocked, now); err != nil {
		t.Fatalf("retry of a run-on-any task behind a failed dependency: %v", err)
	}
	canceled := Facts{State: StateCanceled}
	tr, err = Restore(canceled, 1, "encode", now)
	if err != nil || tr.State != StateWaiting || tr.Event.Kind != EventWaiting || tr.Event.Detail != `dependency "encode" retried` ||
		*tr.LastError != "" || tr.FinishedAt != nil || tr.Task.CanceledBy != uuid.Nil {
		t.Fatalf("restore: %+v %v", tr, err)
	}
}

func TestWorkflowTasksChanged(t *testing.T) {
	w := &Workflow{State: WorkflowRunning, TaskCount: 3, Succeeded: 1}
	tr := WorkflowTasksChanged(w, TaskCounts{Succeeded: 1}, nil, now)
	if tr.State != WorkflowRunning || tr.Finished || len(tr.Events) != 0 || tr.Counts.Succeeded != 2 {
		t.Fatalf("one more success of three: %+v", tr)
	}
	tr = WorkflowTasksChanged(w, TaskCounts{Failed: 1, Canceled: 1}, nil, now)
	if tr.State != WorkflowFailed || !tr.Finished || tr.FinishedAt == nil || len(tr.Events) != 1 || tr.Events[0].Kind != WorkflowEventFailed {
		t.Fatalf("the last two end failed and canceled: %+v", tr)
	}
	done := &Workflow{State: WorkflowFailed, TaskCount: 3, Succeeded: 2, Failed: 1, FinishedAt: &now}
	tr = WorkflowTasksChanged(done, TaskCounts{Failed: -1}, nil, now)
	if tr.State != WorkflowRunning || tr.FinishedAt != nil || len(tr.Events) != 1 || tr.Events[0].Kind != WorkflowEventRetried {
		t.Fatalf("a failed task retried: %+v", tr)
	}
}

func TestDecodeInput(t *testing.T) {
	j := &Job{Inputs: map[string]Input{
		"a": {State: StateSucceeded, Result: json.RawMessage(`{"n": 7}`)},
		"b": {State: StateFailed, Error: "boom"},
		"c": {State: StateSucceeded},
	}}
	var v struct{ N int }
	if err := j.DecodeInput("a", &v); err != nil || v.N != 7 {
		t.Fatalf("decode a: %v %+v", err, v)
	}
	if err := j.DecodeInput("b", &v); err == nil || !strings.Contains(err.Error(), "failed: boom") {
		t.Fatalf("decode a failed input: %v", err)
	}
	if err := j.DecodeInput("c", &v); err != nil || v.N != 7 {
		t.Fatalf("decode an input without result: %v %+v, want v kept", err, v)
	}
	if err := j.DecodeInput("zz", &v); err == nil {
		t.Fatal("decode an unknown input: no error")
	}
}
