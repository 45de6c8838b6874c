package storetest

import (
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var workflowRuleTests = []test{
	{"RetryResumes", testWorkflowRetryResumes},
	{"RetryBehindFailure", testWorkflowRetryBehindFailure},
	{"RetryKeepsOtherFailure", testWorkflowRetryKeepsOtherFailure},
	{"WorkflowRetry", testWorkflowRetryAll},
	{"WorkflowCancel", testWorkflowCancel},
	{"CancelWaitingTask", testWorkflowCancelWaitingTask},
	{"RescueFails", testWorkflowRescueFails},
	{"TimeOutFails", testWorkflowTimeOutFails},
}

// chain submits a → b → c with a sibling s of b (a → s), in queue q, runs
// a, and fails b: c canceled, s queued.
func (e *env) chain(t *testing.T) wflow {
	t.Helper()
	f := e.submit(t, "chain", wtask("q", "a"), wtask("q", "b", "a"), wtask("q", "c", "b"), wtask("s", "s", "a"))
	e.succeedWith(t, e.claimRefs(t, f, "q", 1, "a")[0], `{"a":1}`)
	e.failFor(t, e.claimRefs(t, f, "q", 1, "b")[0], "boom")
	e.wantTaskStates(t, f, map[string]job.State{"a": job.StateSucceeded, "b": job.StateFailed, "c": job.StateCanceled, "s": job.StateQueued})
	return f
}

func testWorkflowRetryResumes(t *testing.T, e *env) {
	f := e.chain(t)
	e.succeed(t, e.claimRefs(t, f, "s", 1, "s")[0])
	e.wantWorkflow(t, f, job.WorkflowFailed, 2, 1, 1)
	aBefore := e.taskOf(t, f, "a")
	e.clk.Advance(time.Second)
	b, err := e.s.JobRetry(t.Context(), f.id(t, "b"))
	if err != nil {
		t.Fatalf("JobRetry b: %v", err)
	}
	if b.State != job.StateQueued || b.Attempt != 0 || b.Ref != "b" {
		t.Fatalf("retried task: %s attempt %d", b.State, b.Attempt)
	}
	c := e.taskOf(t, f, "c")
	if c.State != job.StateWaiting || c.Pending != 1 || c.WaitFor != job.WaitDependencies || c.CanceledBy != [16]byte{} ||
		c.LastError != "" || c.FinishedAt != nil {
		t.Fatalf("restored dependent: %s pending %d canceled by %s error %q", c.State, c.Pending, c.CanceledBy, c.LastError)
	}
	e.wantKinds(t, c.ID, job.EventWaiting, job.EventCanceled, job.EventWaiting)
	wantDetail(t, e.events(t, c.ID)[2], `dependency "b" retried`)
	w := e.wantWorkflow(t, f, job.WorkflowRunning, 2, 0, 0)
	if got := wfKinds(w.Events); got != "submitted failed retried" {
		t.Fatalf("workflow journal %q", got)
	}
	// b runs again, sees a's result; a does not run again.
	b = e.claimRefs(t, f, "q", 10, "b")[0]
	wantInput(t, b, "a", job.StateSucceeded, `{"a":1}`, "")
	e.succeed(t, b)
	e.succeed(t, e.claimRefs(t, f, "q", 10, "c")[0])
	e.claimNone(t, "q")
	if a := e.taskOf(t, f, "a"); a.Attempt != aBefore.Attempt || !a.FinishedAt.Equal(*aBefore.FinishedAt) {
		t.Fatalf("the succeeded task ran again: attempt %d", a.Attempt)
	}
	e.wantWorkflow(t, f, job.WorkflowSucceeded, 4, 0, 0)
	if evs := e.workflowEvents(t); len(evs) != 2 || evs[0].WorkflowState != job.WorkflowFailed || evs[1].WorkflowState != job.WorkflowSucceeded {
		t.Fatalf("outbox: %+v, want workflow.finished failed, then succeeded", evs)
	}
}

func testWorkflowRetryBehindFailure(t *testing.T, e *env) {
	f := e.chain(t)
	before := e.taskOf(t, f, "c")
	_, err := e.s.JobRetry(t.Context(), f.id(t, "c"))
	wantErr(t, "JobRetry of a task behind a failed dependency", err, job.ErrWrongState)
	unchanged(t, before, e.taskOf(t, f, "c"))
	_, err = e.s.JobRetry(t.Context(), f.id(t, "a"))
	wantErr(t, "JobRetry of a succeeded task", err, job.ErrWrongState)
}

func testWorkflowRetryKeepsOtherFailure(t *testing.T, e *env) {
	// d depends on b and x; both fail; retrying b alone leaves d canceled
	// (x still failed), retrying x then restores it.
	f := e.submit(t, "two", wtask("q", "b"), wtask("x", "x"), wtask("q", "d", "b", "x"))
	e.failFor(t, e.claimRefs(t, f, "q", 1, "b")[0], "b broke")
	e.failFor(t, e.claimRefs(t, f, "x", 1, "x")[0], "x broke")
	if d := e.taskOf(t, f, "d"); d.State != job.StateCanceled || d.LastError != `dependency "b" failed` {
		t.Fatalf("d: %s %q", d.State, d.LastError)
	}
	if _, err := e.s.JobRetry(t.Context(), f.id(t, "b")); err != nil {
		t.Fatal(err)
	}
	e.wantTaskStates(t, f, map[string]job.State{"b": job.StateQueued, "d": job.StateCanceled})
	if _, err := e.s.JobRetry(t.Context(), f.id(t, "x")); err != nil {
		t.Fatal(err)
	}
	if d := e.taskOf(t, f, "d"); d.State != job.StateWaiting || d.Pending != 2 {
		t.Fatalf("d after both retried: %s pending %d", d.State, d.Pending)
	}
	e.succeed(t, e.claimRefs(t, f, "q", 1, "b")[0])
	e.succeed(t, e.claimRefs(t, f, "x", 1, "x")[0])
	e.succeed(t, e.claimRefs(t, f, "q", 1, "d")[0])
	e.wantWorkflow(t, f, job.WorkflowSucceeded, 3, 0, 0)
}

func testWorkflowRetryAll(t *testing.T, e *env) {
	f := e.chain(t)
	// Cancel s (queued) too: an operator's cancel, retried with the rest.
	e.cancel(t, f.id(t, "s"))
	e.wantWorkflow(t, f, job.WorkflowFailed, 1, 1, 2)
	w, err := e.s.WorkflowRetry(t.Context(), f.Workflow.ID)
	if err != nil {
		t.Fatalf("WorkflowRetry: %v", err)
	}
	if w.State != job.WorkflowRunning || w.FinishedAt != nil || w.Succeeded != 1 || w.Failed != 0 || w.Canceled != 0 {
		t.Fatalf("WorkflowRetry returned %+v", w)
	}
	e.wantTaskStates(t, f, map[string]job.State{"a": job.StateSucceeded, "b": job.StateQueued, "c": job.StateWaiting, "s": job.StateQueued})
	e.succeed(t, e.claimRefs(t, f, "q", 10, "b")[0])
	e.succeed(t, e.claimRefs(t, f, "q", 10, "c")[0])
	e.succeed(t, e.claimRefs(t, f, "s", 10, "s")[0])
	e.wantWorkflow(t, f, job.WorkflowSucceeded, 4, 0, 0)
	_, err = e.s.WorkflowRetry(t.Context(), f.Workflow.ID)
	wantErr(t, "WorkflowRetry of a succeeded workflow", err, job.ErrWrongState)
	_, err = e.s.WorkflowRetry(t.Context(), f.id(t, "a"))
	wantErr(t, "WorkflowRetry of an unknown workflow", err, job.ErrNotFound)
}

func testWorkflowCancel(t *testing.T, e *env) {
	f := e.submit(t, "w", wtask("q", "a"), wtask("q", "b"), wtask("q", "c", "a"), wtask("q", "d", "c"))
	a := e.claimRefs(t, f, "q", 1, "a")[0]
	e.clk.Advance(time.Second)
	w, err := e.s.WorkflowCancel(t.Context(), f.Workflow.ID)
	if err != nil {
		t.Fatalf("WorkflowCancel: %v", err)
	}
	if w.State != job.WorkflowRunning || w.Canceled != 3 {
		t.Fatalf("WorkflowCancel returned %+v, want running (a runs) with 3 canceled", w)
	}
	e.wantTaskStates(t, f, map[string]job.State{"a": job.StateRunning, "b": job.StateCanceled, "c": job.StateCanceled, "d": job.StateCanceled})
	if got := e.taskOf(t, f, "a"); !got.CancelRequested || got.LeaseToken != a.LeaseToken {
		t.Fatalf("running task: cancel requested %v", got.CancelRequested)
	}
	c := e.taskOf(t, f, "c")
	wantDetail(t, e.events(t, c.ID)[1], job.CanceledWithWorkflow)
	if c.WaitFor != "" || c.CanceledBy != [16]byte{} {
		t.Fatalf("canceled waiting task: wait_for %q canceled_by %s", c.WaitFor, c.CanceledBy)
	}
	// A repeated cancel writes nothing.
	before := e.workflow(t, f.Workflow.ID)
	if _, err := e.s.WorkflowCancel(t.Context(), f.Workflow.ID); err != nil {
		t.Fatalf("WorkflowCancel again: %v", err)
	}
	if after := e.workflow(t, f.Workflow.ID); len(after.Events) != len(before.Events) || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("repeated cancel wrote: journal %q", wfKinds(after.Events))
	}
	// The holder honours the request: the workflow ends canceled.
	e.finishOne(t, store.Outcome{Lease: leaseOf(a), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "stopped"}})
	d := e.wantWorkflow(t, f, job.WorkflowCanceled, 0, 0, 4)
	if got := wfKinds(d.Events); got != "submitted cancel-requested canceled" {
		t.Fatalf("workflow journal %q", got)
	}
	_, err = e.s.WorkflowCancel(t.Context(), f.Workflow.ID)
	wantErr(t, "WorkflowCancel of a canceled workflow", err, job.ErrWrongState)
	_, err = e.s.WorkflowCancel(t.Context(), a.ID)
	wantErr(t, "WorkflowCancel of an unknown workflow", err, job.ErrNotFound)
}

func testWorkflowCancelWaitingTask(t *testing.T, e *env) {
	any := wtask("n", "notify", "b")
	any.RunOn = job.RunOnAny
	f := e.submit(t, "w", wtask("q", "a"), wtask("q", "b", "a"), wtask("q", "c", "b"), any)
	got := e.cancel(t, f.id(t, "b"))
	if got.State != job.StateCanceled || got.WaitFor != "" || got.Ref != "b" {
		t.Fatalf("JobCancel of a waiting task: %s waiting for %q", got.State, got.WaitFor)
	}
	e.wantTaskStates(t, f, map[string]job.State{"a": job.StateQueued, "c": job.StateCanceled, "notify": job.StateQueued})
	if c := e.taskOf(t, f, "c"); c.LastError != `dependency "b" canceled` {
		t.Fatalf("c: %q", c.LastError)
	}
	n := e.claimRefs(t, f, "n", 1, "notify")
	wantInput(t, n[0], "b", job.StateCanceled, "", "")
	e.succeed(t, n[0])
	e.succeed(t, e.claimRefs(t, f, "q", 1, "a")[0])
	e.wantWorkflow(t, f, job.WorkflowCanceled, 2, 0, 2)
}

func testWorkflowRescueFails(t *testing.T, e *env) {
	a := wtask("q", "a")
	a.MaxAttempts, a.LeaseTTL = 1, time.Second
	f := e.submit(t, "w", a, wtask("q", "b", "a"))
	e.claimRefs(t, f, "q", 1, "a")
	e.clk.Advance(2 * time.Second)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("JobRescue: %d", n)
	}
	e.wantTaskStates(t, f, map[string]job.State{"a": job.StateFailed, "b": job.StateCanceled})
	e.wantWorkflow(t, f, job.WorkflowFailed, 0, 1, 1)
}

func testWorkflowTimeOutFails(t *testing.T, e *env) {
	a := wtask("q", "a")
	a.MaxAttempts, a.Timeout = 1, time.Second
	f := e.submit(t, "w", a, wtask("q", "b", "a"))
	e.claimRefs(t, f, "q", 1, "a")
	e.clk.Advance(2 * time.Second)
	if n, err := e.s.JobTimeOut(t.Context(), store.TimeOutParams{Limit: 10}); err != nil || n != 1 {
		t.Fatalf("JobTimeOut: %d %v", n, err)
	}
	e.wantTaskStates(t, f, map[string]job.State{"a": job.StateFailed, "b": job.StateCanceled})
	e.wantWorkflow(t, f, job.WorkflowFailed, 0, 1, 1)
}
