package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var workflowTests = []test{
	{"Submit", testWorkflowSubmit},
	{"Diamond", testWorkflowDiamond},
	{"FanOutFanIn", testWorkflowFanOutFanIn},
	{"FailureCancelsDescendants", testWorkflowFailureCancelsDescendants},
	{"RunOnAny", testWorkflowRunOnAny},
	{"ReleaseKeepsRunAt", testWorkflowReleaseKeepsRunAt},
	{"Refused", testWorkflowRefused},
	{"Idempotent", testWorkflowIdempotent},
	{"GetAndList", testWorkflowGetAndList},
	{"TaskOnlyRules", testWorkflowTaskOnlyRules},
	{"InTx", testWorkflowInTx},
	{"Delete", testWorkflowDelete},
}

func testWorkflowSubmit(t *testing.T, e *env) {
	f := e.submit(t, "diamond", wtask("q", "a"), wtask("q", "b", "a"), wtask("q", "c", "a"), wtask("q", "d", "b", "c"))
	if f.Workflow.State != job.WorkflowRunning || f.Workflow.TaskCount != 4 || f.Workflow.Name != "diamond" || f.Workflow.FinishedAt != nil {
		t.Fatalf("submitted workflow: %+v", f.Workflow)
	}
	a, d := f.byRef["a"], f.byRef["d"]
	if a.State != job.StateQueued || a.Dependencies != 0 || a.WaitFor != "" || a.RunOn != job.RunOnSuccess {
		t.Fatalf("root task: %s waiting for %q, %d dependencies, run on %q", a.State, a.WaitFor, a.Dependencies, a.RunOn)
	}
	if d.State != job.StateWaiting || d.WaitFor != job.WaitDependencies || d.Dependencies != 2 || d.Pending != 2 {
		t.Fatalf("fan-in task: %s waiting for %q, %d dependencies, %d pending", d.State, d.WaitFor, d.Dependencies, d.Pending)
	}
	// Each task comes after its dependencies in id order.
	for _, dep := range []string{"b", "c"} {
		if compareIDs(f.byRef["a"], f.byRef[dep]) >= 0 || compareIDs(f.byRef[dep], d) >= 0 {
			t.Fatalf("task ids are not in dependency order")
		}
	}
	e.wantKinds(t, d.ID, job.EventWaiting)
	e.wantKinds(t, a.ID, job.EventQueued)
	// Only the root is claimable; a waiting task holds no lease.
	c := e.claimRefs(t, f, "q", 10, "a")
	if c[0].Inputs != nil {
		t.Fatalf("root task claimed with inputs %v", c[0].Inputs)
	}
	e.claimNone(t, "q")
	if got := e.get(t, d.ID); got.LeaseToken != [16]byte{} || got.LeaseExpiresAt != nil {
		t.Fatalf("waiting task holds a lease")
	}
	// Every read shows the workflow and the ref.
	page := e.list(t, store.ListParams{States: []job.State{job.StateWaiting}, Limit: 10})
	if page.Total != 3 {
		t.Fatalf("JobList of waiting jobs: %d, want 3", page.Total)
	}
	for _, j := range page.Jobs {
		if j.WorkflowID != f.Workflow.ID || j.Ref == "" {
			t.Fatalf("listed task without its workflow and ref: %s %q", j.WorkflowID, j.Ref)
		}
	}
	qs, err := e.s.QueueList(t.Context())
	if err != nil || len(qs) != 1 || qs[0].Counts[job.StateWaiting] != 3 || qs[0].Counts[job.StateRunning] != 1 {
		t.Fatalf("QueueList: %+v %v, want 3 waiting and 1 running", qs, err)
	}
}

func testWorkflowDiamond(t *testing.T, e *env) {
	f := e.submit(t, "diamond", wtask("q", "a"), wtask("q", "b", "a"), wtask("q", "c", "a"), wtask("q", "d", "b", "c"))
	a := e.claimRefs(t, f, "q", 10, "a")[0]
	e.clk.Advance(time.Second)
	e.succeedWith(t, a, `{"file":"in.mov"}`)
	// Both dependents released in the transaction of a's success.
	e.wantTaskStates(t, f, map[string]job.State{"b": job.StateQueued, "c": job.StateQueued, "d": job.StateWaiting})
	e.wantKinds(t, f.id(t, "b"), job.EventWaiting, job.EventReleased)
	if b := e.taskOf(t, f, "b"); !b.RunAt.Equal(e.now()) || b.Pending != 0 || b.WaitFor != "" {
		t.Fatalf("released task: run_at %s pending %d wait_for %q, want now, 0, none", b.RunAt, b.Pending, b.WaitFor)
	}
	bc := e.claimRefs(t, f, "q", 10, "b", "c")
	for _, j := range bc {
		wantInput(t, j, "a", job.StateSucceeded, `{"file":"in.mov"}`, "")
		if len(j.Inputs) != 1 {
			t.Fatalf("task %q inputs %v, want only a's", j.Ref, j.Inputs)
		}
	}
	b, c := bc[0], bc[1]
	if b.Ref != "b" {
		b, c = c, b
	}
	e.succeedWith(t, b, `{"rendition":"720p"}`)
	if d := e.taskOf(t, f, "d"); d.State != job.StateWaiting || d.Pending != 1 {
		t.Fatalf("fan-in after one of two: %s pending %d, want waiting for 1", d.State, d.Pending)
	}
	e.claimNone(t, "q")
	e.succeedWith(t, c, `{"rendition":"1080p"}`)
	d := e.claimRefs(t, f, "q", 10, "d")[0]
	wantInput(t, d, "b", job.StateSucceeded, `{"rendition":"720p"}`, "")
	wantInput(t, d, "c", job.StateSucceeded, `{"rendition":"1080p"}`, "")
	var out struct{ Rendition string }
	if err := d.DecodeInput("c", &out); err != nil || out.Rendition != "1080p" {
		t.Fatalf("DecodeInput c: %v %+v", err, out)
	}
	e.wantWorkflow(t, f, job.WorkflowRunning, 3, 0, 0)
	if evs := e.workflowEvents(t); len(evs) != 0 {
		t.Fatalf("workflow.finished before its end: %+v", evs)
	}
	e.clk.Advance(time.Second)
	e.succeedWith(t, d, `"published"`)
	w := e.wantWorkflow(t, f, job.WorkflowSucceeded, 4, 0, 0)
	wantTimePtr(t, "workflow finished_at", w.FinishedAt, e.now())
	if got := wfKinds(w.Events); got != "submitted succeeded" {
		t.Fatalf("workflow journal %q", got)
	}
	evs := e.workflowEvents(t)
	if len(evs) != 1 || evs[0].WorkflowID != f.Workflow.ID || evs[0].WorkflowName != "diamond" ||
		evs[0].WorkflowState != job.WorkflowSucceeded || evs[0].FinishedAt == nil {
		t.Fatalf("outbox: %+v, want one workflow.finished of the diamond, succeeded", evs)
	}
}

func testWorkflowFanOutFanIn(t *testing.T, e *env) {
	const n = 500
	tasks := []job.TaskParams{wtask("root", "root")}
	var refs []string
	for i := range n {
		ref := fmt.Sprintf("part-%03d", i)
		refs = append(refs, ref)
		tasks = append(tasks, wtask("parts", ref, "root"))
	}
	tasks = append(tasks, wtask("join", "join", refs...))
	f := e.submit(t, "fan", tasks...)
	e.succeed(t, e.claimRefs(t, f, "root", 1, "root")[0])
	// Finished in batches of 100, results collected by the fan-in.
	for done := 0; done < n; {
		batch := e.claim(t, "parts", 100)
		if len(batch) == 0 {
			t.Fatalf("after %d parts, none claimable", done)
		}
		outs := make([]store.Outcome, len(batch))
		for i, j := range batch {
			outs[i] = store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(fmt.Sprintf(`{"part":%q}`, j.Ref))}}
		}
		for i, r := range e.finish(t, outs...) {
			if r.Lost || r.State != job.StateSucceeded {
				t.Fatalf("finish part %q: %+v", batch[i].Ref, r)
			}
		}
		done += len(batch)
		if done < n {
			e.claimNone(t, "join")
		}
	}
	join := e.claimRefs(t, f, "join", 10, "join")[0]
	if len(join.Inputs) != n {
		t.Fatalf("fan-in got %d inputs, want %d", len(join.Inputs), n)
	}
	for _, ref := range refs {
		wantInput(t, join, ref, job.StateSucceeded, fmt.Sprintf(`{"part":%q}`, ref), "")
	}
	e.succeed(t, join)
	e.wantWorkflow(t, f, job.WorkflowSucceeded, n+2, 0, 0)
}

func testWorkflowFailureCancelsDescendants(t *testing.T, e *env) {
	// a → b → c → d, b → e; a → sibling → after. b fails.
	f := e.submit(t, "chain", wtask("q", "a"), wtask("q", "b", "a"), wtask("q", "c", "b"), wtask("q", "d", "c"),
		wtask("q", "e", "b"), wtask("q", "sibling", "a"), wtask("q", "after", "sibling"),
		wtask("q", "mixed", "c", "after"))
	e.succeed(t, e.claimRefs(t, f, "q", 10, "a")[0])
	got := e.claimRefs(t, f, "q", 10, "b", "sibling")
	b, sibling := got[0], got[1]
	if b.Ref != "b" {
		b, sibling = sibling, b
	}
	e.clk.Advance(time.Second)
	e.failFor(t, b, "transcoder crashed")
	e.wantTaskStates(t, f, map[string]job.State{"b": job.StateFailed, "c": job.StateCanceled, "d": job.StateCanceled,
		"e": job.StateCanceled, "mixed": job.StateCanceled, "sibling": job.StateRunning, "after": job.StateWaiting})
	for _, ref := range []string{"c", "e"} {
		tk := e.taskOf(t, f, ref)
		if tk.LastError != `dependency "b" failed` || tk.CanceledBy != b.ID || tk.FinishedAt == nil {
			t.Fatalf("task %q: last error %q canceled by %s, want naming b", ref, tk.LastError, tk.CanceledBy)
		}
		e.wantKinds(t, tk.ID, job.EventWaiting, job.EventCanceled)
		wantDetail(t, e.events(t, tk.ID)[1], `dependency "b" failed`)
	}
	if d := e.taskOf(t, f, "d"); d.LastError != `dependency "c" canceled` || d.CanceledBy != f.id(t, "c") {
		t.Fatalf("task d: %q, want naming c, canceled", d.LastError)
	}
	e.wantWorkflow(t, f, job.WorkflowRunning, 1, 1, 4)
	// The sibling branch goes on.
	e.succeed(t, sibling)
	e.succeed(t, e.claimRefs(t, f, "q", 10, "after")[0])
	e.claimNone(t, "q")
	e.wantWorkflow(t, f, job.WorkflowFailed, 3, 1, 4)
}

func testWorkflowRunOnAny(t *testing.T, e *env) {
	cleanup := wtask("q", "cleanup", "upload", "encode")
	cleanup.RunOn = job.RunOnAny
	f := e.submit(t, "any", wtask("q", "upload"), wtask("q", "encode"), cleanup, wtask("q", "publish", "encode"))
	got := e.claimRefs(t, f, "q", 10, "upload", "encode")
	up, enc := got[0], got[1]
	if up.Ref != "upload" {
		up, enc = enc, up
	}
	e.failFor(t, enc, "out of disk")
	e.wantTaskStates(t, f, map[string]job.State{"cleanup": job.StateWaiting, "publish": job.StateCanceled})
	e.succeedWith(t, up, `{"url":"s3://x"}`)
	c := e.claimRefs(t, f, "q", 10, "cleanup")[0]
	wantInput(t, c, "encode", job.StateFailed, "", "out of disk")
	wantInput(t, c, "upload", job.StateSucceeded, `{"url":"s3://x"}`, "")
	if err := c.DecodeInput("encode", new(any)); err == nil {
		t.Fatal("DecodeInput of a failed input: no error")
	}
	e.succeed(t, c)
	e.wantWorkflow(t, f, job.WorkflowFailed, 2, 1, 1)
}

func testWorkflowReleaseKeepsRunAt(t *testing.T, e *env) {
	later := wtask("q", "later", "a")
	later.RunAt = e.now().Add(time.Hour)
	f := e.submit(t, "later", wtask("q", "a"), later)
	e.succeed(t, e.claimRefs(t, f, "q", 10, "a")[0])
	l := e.taskOf(t, f, "later")
	if l.State != job.StateQueued || !l.RunAt.Equal(e.now().Add(time.Hour)) {
		t.Fatalf("released task with a later run_at: %s at %s", l.State, l.RunAt)
	}
	e.claimNone(t, "q")
	e.clk.Advance(time.Hour)
	e.claimRefs(t, f, "q", 10, "later")
}

func testWorkflowRefused(t *testing.T, e *env) {
	for _, tc := range []struct {
		name     string
		tasks    []job.TaskParams
		maxTasks int
		field    string
	}{
		{"cycle", []job.TaskParams{wtask("q", "a", "c"), wtask("q", "b", "a"), wtask("q", "c", "b")}, 0, "tasks[0].depends_on"},
		{"unknown ref", []job.TaskParams{wtask("q", "a"), wtask("q", "b", "nope")}, 0, "tasks[1].depends_on"},
		{"duplicate ref", []job.TaskParams{wtask("q", "a"), wtask("q", "a")}, 0, "tasks[1].ref"},
		{"too many tasks", []job.TaskParams{wtask("q", "a"), wtask("q", "b"), wtask("q", "c"), wtask("q", "d")}, 3, "tasks[3]"},
		{"bad task", []job.TaskParams{wtask("q", "a"), {Ref: "b", InsertParams: job.InsertParams{Queue: "q"}}}, 0, "tasks[1].kind"},
	} {
		_, err := e.s.WorkflowSubmit(t.Context(), store.WorkflowSubmitParams{
			WorkflowParams: job.WorkflowParams{Name: "w", Tasks: tc.tasks}, MaxTasks: tc.maxTasks})
		wantField(t, tc.name, err, tc.field)
	}
	if n := e.total(t); n != 0 {
		t.Fatalf("refused workflows wrote %d jobs", n)
	}
	l, err := e.s.WorkflowList(t.Context(), store.WorkflowListParams{Limit: 10})
	if err != nil || l.Total != 0 {
		t.Fatalf("refused workflows wrote %+v %v", l, err)
	}
}

func testWorkflowIdempotent(t *testing.T, e *env) {
	params := store.WorkflowSubmitParams{WorkflowParams: job.WorkflowParams{Name: "w", IdempotencyKey: "order-7",
		Tasks: []job.TaskParams{wtask("q", "a"), wtask("q", "b", "a")}}}
	first, err := e.s.WorkflowSubmit(t.Context(), params)
	if err != nil || !first.Created {
		t.Fatalf("first submit: %+v %v", first, err)
	}
	// The same request, its tasks listed the other way round.
	same := params
	same.Tasks = []job.TaskParams{wtask("q", "b", "a"), wtask("q", "a")}
	again, err := e.s.WorkflowSubmit(t.Context(), same)
	if err != nil || again.Created || again.Workflow.ID != first.Workflow.ID || len(again.Tasks) != 2 {
		t.Fatalf("same key, same request: %+v %v, want the first workflow, not created", again, err)
	}
	if again.Workflow.IdempotencyKey != "order-7" {
		t.Fatalf("idempotency key %q", again.Workflow.IdempotencyKey)
	}
	other := params
	other.Tasks = []job.TaskParams{wtask("q", "a"), wtask("q", "b")}
	_, err = e.s.WorkflowSubmit(t.Context(), other)
	wantErr(t, "same key, another request", err, job.ErrIdempotencyMismatch)
	if n := e.total(t); n != 2 {
		t.Fatalf("%d jobs after three submits of one key, want 2", n)
	}
}

func testWorkflowGetAndList(t *testing.T, e *env) {
	f := e.submit(t, "transcode", wtask("q", "a"), wtask("q", "b", "a"))
	e.clk.Advance(time.Second)
	g := e.submit(t, "transcode", wtask("g", "a"))
	e.clk.Advance(time.Second)
	h := e.submit(t, "backup", wtask("h", "a"))
	e.succeed(t, e.claimRefs(t, g, "g", 1, "a")[0])

	d := e.workflow(t, f.Workflow.ID)
	if len(d.Tasks) != 2 || d.Tasks[0].Ref != "a" || d.Tasks[1].Ref != "b" || d.Counts[job.StateQueued] != 1 || d.Counts[job.StateWaiting] != 1 {
		t.Fatalf("WorkflowGet: %d tasks, counts %v", len(d.Tasks), d.Counts)
	}
	if len(d.Edges) != 1 || d.Edges[0] != (store.Edge{Task: f.id(t, "b"), DependsOn: f.id(t, "a")}) {
		t.Fatalf("WorkflowGet edges %+v", d.Edges)
	}
	if len(d.Counts) != len(job.States) || wfKinds(d.Events) != "submitted" {
		t.Fatalf("WorkflowGet counts %v events %q", d.Counts, wfKinds(d.Events))
	}
	_, err := e.s.WorkflowGet(t.Context(), f.byRef["a"].ID)
	wantErr(t, "WorkflowGet of a task's id", err, job.ErrNotFound)

	list := func(p store.WorkflowListParams) (ids []string, total int64) {
		t.Helper()
		res, err := e.s.WorkflowList(t.Context(), p)
		if err != nil {
			t.Fatalf("WorkflowList %+v: %v", p, err)
		}
		for _, w := range res.Workflows {
			ids = append(ids, w.ID.String())
		}
		return ids, res.Total
	}
	all, total := list(store.WorkflowListParams{Limit: 10})
	want := []string{h.Workflow.ID.String(), g.Workflow.ID.String(), f.Workflow.ID.String()}
	if fmt.Sprint(all) != fmt.Sprint(want) || total != 3 {
		t.Fatalf("WorkflowList: %v (%d), want newest first %v", all, total, want)
	}
	byName, total := list(store.WorkflowListParams{Name: "transcode", Limit: 1})
	if len(byName) != 1 || byName[0] != want[1] || total != 2 {
		t.Fatalf("WorkflowList by name: %v (%d)", byName, total)
	}
	next, _ := list(store.WorkflowListParams{Name: "transcode", Limit: 1, After: &g.Workflow.ID})
	if len(next) != 1 || next[0] != want[2] {
		t.Fatalf("WorkflowList by name, page 2: %v", next)
	}
	done, total := list(store.WorkflowListParams{States: []job.WorkflowState{job.WorkflowSucceeded}, Limit: 10})
	if len(done) != 1 || done[0] != want[1] || total != 1 {
		t.Fatalf("WorkflowList succeeded: %v (%d)", done, total)
	}
	_, err = e.s.WorkflowList(t.Context(), store.WorkflowListParams{States: []job.WorkflowState{"done"}})
	wantField(t, "WorkflowList of an unknown state", err, "state")
}

func testWorkflowTaskOnlyRules(t *testing.T, e *env) {
	f := e.submit(t, "w", wtask("q", "a"), wtask("q", "b", "a"))
	a := e.claimRefs(t, f, "q", 1, "a")[0]
	e.succeed(t, a)
	_, err := e.s.JobRerun(t.Context(), a.ID, store.RerunParams{})
	wantErr(t, "JobRerun of a task", err, job.ErrWrongState)
	_, err = e.s.JobTake(t.Context(), a.ID)
	wantErr(t, "JobTake of a task", err, job.ErrWrongState)
	// A purge and a queue's retention leave tasks alone; the retention
	// deletes them with their finished workflow.
	if _, err := e.s.QueuePurge(t.Context(), "q"); err != nil {
		t.Fatal(err)
	}
	e.get(t, a.ID)
	e.clk.Advance(time.Hour)
	if n, err := e.s.JobPruneQueue(t.Context(), "q", e.now(), 100); err != nil || n != 0 {
		t.Fatalf("JobPruneQueue: %d %v, want tasks kept", n, err)
	}
	if n, err := e.s.JobPrune(t.Context(), e.now(), 100); err != nil || n != 0 {
		t.Fatalf("JobPrune of a running workflow's task: %d %v", n, err)
	}
	e.succeed(t, e.claimRefs(t, f, "q", 1, "b")[0])
	e.wantWorkflow(t, f, job.WorkflowSucceeded, 2, 0, 0)
	e.clk.Advance(time.Hour)
	if n, err := e.s.JobPrune(t.Context(), e.now(), 100); err != nil || n != 2 {
		t.Fatalf("JobPrune of a finished workflow: %d %v, want its 2 tasks", n, err)
	}
	e.gone(t, a.ID)
	_, err = e.s.WorkflowGet(t.Context(), f.Workflow.ID)
	wantErr(t, "WorkflowGet of a pruned workflow", err, job.ErrNotFound)
}

func testWorkflowInTx(t *testing.T, e *env) {
	err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
		if _, err := ex.WorkflowSubmit(ctx, store.WorkflowSubmitParams{WorkflowParams: job.WorkflowParams{Name: "w",
			Tasks: []job.TaskParams{wtask("q", "a"), wtask("q", "b", "a")}}}); err != nil {
			return err
		}
		return errTxTest
	})
	wantErr(t, "InTx", err, errTxTest)
	if n := e.total(t); n != 0 {
		t.Fatalf("a workflow submitted in a rolled-back transaction left %d jobs", n)
	}
}

func testWorkflowDelete(t *testing.T, e *env) {
	f := e.submit(t, "w", wtask("q", "a"), wtask("q", "b", "a"))
	_, err := e.s.WorkflowDelete(t.Context(), f.Workflow.ID)
	wantErr(t, "WorkflowDelete of a running workflow", err, job.ErrWrongState)
	e.get(t, f.id(t, "a"))
	other := e.submit(t, "other", wtask("o", "x"))
	if _, err := e.s.WorkflowCancel(t.Context(), f.Workflow.ID); err != nil {
		t.Fatal(err)
	}
	n, err := e.s.WorkflowDelete(t.Context(), f.Workflow.ID)
	if err != nil || n != 2 {
		t.Fatalf("WorkflowDelete: %d %v, want its 2 tasks", n, err)
	}
	e.gone(t, f.id(t, "a"))
	e.gone(t, f.id(t, "b"))
	_, err = e.s.WorkflowDelete(t.Context(), f.Workflow.ID)
	wantErr(t, "WorkflowDelete again", err, job.ErrNotFound)
	if d := e.workflow(t, other.Workflow.ID); len(d.Tasks) != 1 {
		t.Fatalf("another workflow lost its tasks")
	}
}
