package chaos

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// record is a workflow's evidence built by hand: a diamond a → b, c → d
// with a cleanup that runs on any end of d, whose database record the
// cases change to break one rule each.
type record struct {
	spec  wfSpec
	ids   map[string]uuid.UUID
	tasks map[string]*job.Job
	trs   map[uuid.UUID][]transition
	runs  []execution
	t0    time.Time
	xid   int
}

func newRecord() *record { return newRecordOf(false) }

// newRecordOf builds the record; failB makes b fail for good (doomed),
// which cancels d in its transaction and releases the cleanup there.
func newRecordOf(failB bool) *record {
	r := &record{ids: map[string]uuid.UUID{}, tasks: map[string]*job.Job{}, trs: map[uuid.UUID][]transition{},
		t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	task := func(ref string, deps ...string) wfTask {
		return wfTask{ref: ref, deps: deps, runOn: job.RunOnSuccess, spec: jobSpec{queue: queueRemoteA, mode: modeOK}}
	}
	r.spec = wfSpec{key: "wf-1", shape: "diamond", tasks: []wfTask{task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c"), task("cleanup", "d")}}
	r.spec.tasks[4].runOn = job.RunOnAny
	for _, t := range r.spec.tasks {
		id := uuid.Must(uuid.NewV7())
		r.ids[t.ref] = id
		r.tasks[t.ref] = &job.Job{ID: id, Ref: t.ref, State: job.StateSucceeded, RunOn: t.runOn}
	}
	// Each task runs in turn; its end releases its dependents in the
	// same transaction.
	r.run("a", job.StateSucceeded)
	r.release("b", "c")
	if failB {
		r.spec.tasks[1].spec.mode = modeDoomed
		r.run("b", job.StateFailed)
		r.endWaiting("d", job.StateCanceled)
		d := r.tasks["d"]
		d.State, d.CanceledBy, d.LastError = job.StateCanceled, r.ids["b"], `dependency "b" failed`
		r.release("cleanup")
		r.run("c", job.StateSucceeded)
	} else {
		r.run("b", job.StateSucceeded)
		r.run("c", job.StateSucceeded)
		r.release("d")
		r.run("d", job.StateSucceeded)
		r.release("cleanup")
	}
	r.run("cleanup", job.StateSucceeded)
	return r
}

// next is the record's next transaction: its commit, a millisecond
// after the one before, and its id.
func (r *record) next() (time.Time, string) {
	r.xid++
	return r.t0.Add(time.Duration(r.xid) * time.Millisecond), fmt.Sprint(r.xid)
}

func (r *record) run(ref string, end job.State) {
	id := r.ids[ref]
	claimed, x := r.next()
	r.trs[id] = append(r.trs[id], transition{from: "queued", to: "running", attempt: 1, owner: "w", committed: claimed, xid: x})
	ended, x := r.next()
	r.trs[id] = append(r.trs[id], transition{from: "running", to: string(end), attempt: 1, owner: "w", committed: ended, xid: x})
	r.runs = append(r.runs, execution{who: "go-1", job: id, attempt: 1, start: claimed.UnixMicro() + 10, end: ended.UnixMicro() - 10})
	r.tasks[ref].State = end
}

// release queues refs in the transaction of the last transition made.
func (r *record) release(refs ...string) {
	for _, ref := range refs {
		r.endWaiting(ref, job.StateQueued)
	}
}

// endWaiting moves ref from waiting to state in the transaction of the
// last transition made.
func (r *record) endWaiting(ref string, state job.State) {
	at, x := r.t0.Add(time.Duration(r.xid)*time.Millisecond), fmt.Sprint(r.xid)
	id := r.ids[ref]
	r.trs[id] = append(r.trs[id], transition{from: "waiting", to: string(state), committed: at, xid: x})
}

// check runs checkWorkflows over the record and returns its failures.
func (r *record) check(t *testing.T) []string {
	var failures []string
	h := &harness{t: t, collect: func(s string) { failures = append(failures, s) }}
	d := &store.WorkflowDetail{Workflow: job.Workflow{ID: uuid.Must(uuid.NewV7()), IdempotencyKey: r.spec.key}}
	for _, pt := range r.spec.tasks {
		d.Tasks = append(d.Tasks, r.tasks[pt.ref])
		for _, dep := range pt.deps {
			d.Edges = append(d.Edges, store.Edge{Task: r.ids[pt.ref], DependsOn: r.ids[dep]})
		}
	}
	counts := store.CountTasks(d.Tasks)
	d.TaskCount, d.Succeeded, d.Failed, d.Canceled = len(d.Tasks), counts[job.StateSucceeded], counts[job.StateFailed], counts[job.StateCanceled]
	d.State = job.WorkflowStateOf(d.TaskCount, d.Succeeded, d.Failed, d.Canceled)
	d.FinishedAt = &r.t0
	d.Events = []job.WorkflowEvent{{Kind: job.WorkflowEventSubmitted}, {Kind: job.WorkflowEventKind(d.State)}}
	ev := &evidence{transitions: r.trs, runs: r.runs, wf: &wfEvidence{
		specs:   []wfSpec{r.spec},
		answers: map[string][]wfSubmission{r.spec.key: {{id: d.ID, created: true}}},
		byKey:   map[string][]*store.WorkflowDetail{r.spec.key: {d}},
	}}
	ev.checkWorkflows(h)
	return failures
}

// TestWorkflowChecks: the workflow checks pass a record that keeps the
// rules, and fail each record that breaks one, naming what broke.
func TestWorkflowChecks(t *testing.T) {
	if got := newRecord().check(t); len(got) != 0 {
		t.Fatalf("a record that keeps the rules fails: %q", got)
	}
	if got := newRecordOf(true).check(t); len(got) != 0 {
		t.Fatalf("a record of a failure in the middle that keeps the rules fails: %q", got)
	}
	for _, c := range []struct {
		name   string
		breaks func(r *record)
		want   string
	}{
		{"claimed before a dependency ended", func(r *record) {
			trs := r.trs[r.ids["d"]]
			trs[1].committed = r.t0 // its claim, before c ended
		}, "before its dependency"},
		{"run by a worker before a dependency ended", func(r *record) {
			i := slices.IndexFunc(r.runs, func(e execution) bool { return e.job == r.ids["d"] })
			r.runs[i].start = r.t0.UnixMicro()
		}, "ran attempt 1 from"},
		{"released in a transaction of no dependency", func(r *record) {
			r.trs[r.ids["d"]][0].xid = "999"
		}, "in which none of its dependencies ended"},
		{"released twice", func(r *record) {
			id := r.ids["b"]
			r.trs[id] = append(r.trs[id], r.trs[id][0])
		}, "left the waiting state 2 times"},
		{"not ended as planned", func(r *record) {
			r.tasks["cleanup"].State = job.StateQueued
		}, "want succeeded"},
		{"canceled by a dependency that succeeded", func(r *record) {
			d := r.tasks["d"]
			d.State, d.CanceledBy, d.LastError = job.StateCanceled, r.ids["c"], `dependency "c" failed`
		}, "which succeeded"},
		{"run on success after a dependency failed", func(r *record) {
			*r = *newRecordOf(true)
			id := r.ids["d"]
			r.trs[id][0].to = "queued"
			r.tasks["d"].State, r.tasks["d"].CanceledBy = job.StateSucceeded, uuid.Nil
		}, "runs on success, yet was released"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRecord()
			c.breaks(r)
			got := r.check(t)
			if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Fatalf("failures %q, want one saying %q", got, c.want)
			}
		})
	}
}
