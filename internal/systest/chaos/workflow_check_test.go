package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// wfEvidence is the workflows' part of the evidence: the plan, the
// submissions' answers, and each workflow with its tasks as the store
// shows it at the end.
type wfEvidence struct {
	specs   []wfSpec
	answers map[string][]wfSubmission
	errs    []string
	tries   int
	// byKey are the workflows the store holds, by idempotency key (more
	// than one for a key is a failure).
	byKey map[string][]*store.WorkflowDetail
	// tasks are the ids of every task of every workflow.
	tasks map[uuid.UUID]bool
}

// wfChecked sums up the workflows' checks, for the figures.
type wfChecked struct {
	workflows, tasks int
	states           map[string]int // workflows by final state
	taskStates       map[string]int
	// releases are the dependents released or canceled in the transaction
	// of a dependency's end (all of them, checked by transaction id);
	// ordered the claims and executions checked to start after their
	// dependencies' ends.
	releases, ordered int
}

// gatherWorkflows reads every workflow of the run from the store, once
// the workers stopped.
func (h *harness) gatherWorkflows(st store.Store, sub *wfSubmitter, specs []wfSpec) *wfEvidence {
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Minute)
	defer cancel()
	sub.mu.Lock()
	w := &wfEvidence{specs: specs, answers: sub.answers, errs: sub.errs, tries: sub.tries,
		byKey: make(map[string][]*store.WorkflowDetail), tasks: make(map[uuid.UUID]bool)}
	sub.mu.Unlock()
	list, err := st.WorkflowList(ctx, store.WorkflowListParams{Limit: 100_000, NoTotal: true})
	if err != nil {
		h.errorf("list the workflows: %v", err)
		return w
	}
	for _, wf := range list.Workflows {
		d, err := st.WorkflowGet(ctx, wf.ID)
		if err != nil {
			h.errorf("read workflow %s: %v", wf.ID, err)
			continue
		}
		w.byKey[wf.IdempotencyKey] = append(w.byKey[wf.IdempotencyKey], d)
		for _, t := range d.Tasks {
			w.tasks[t.ID] = true
		}
	}
	return w
}

// checkWorkflows: every workflow of the plan was submitted, once (its
// idempotency key answered with one workflow, created at most once, and
// the store holds exactly the plan's); each ended as the rules say, and
// each of its tasks too (none lost: every one final, as planned); the
// database's record shows every dependent released (or canceled) in the
// very transaction of a dependency's end, exactly once, and no task
// claimed before every dependency ended, nor run by a worker before
// (nor after a dependency failed, unless it runs on any end); a task
// canceled by a dependency names a dependency that did not succeed and
// never ran. That no task ran twice is the checks' of every job
// (checkJobs, checkOutcomes), which count tasks as they count jobs.
func (ev *evidence) checkWorkflows(h *harness) wfChecked {
	w := ev.wf
	c := wfChecked{states: make(map[string]int), taskStates: make(map[string]int)}
	for _, e := range w.errs {
		h.errorf("a workflow's submission failed for good: %s", e)
	}
	planned := make(map[string]bool, len(w.specs))
	for _, sp := range w.specs {
		planned[sp.key] = true
	}
	for key, ds := range w.byKey {
		if !planned[key] {
			h.errorf("workflow %s (idempotency key %q) was made by no submission of the workload", ds[0].ID, key)
		}
		if len(ds) > 1 {
			h.errorf("idempotency key %s made %d workflows", key, len(ds))
		}
	}
	runsOf := make(map[uuid.UUID][]execution)
	for _, r := range ev.runs {
		runsOf[r.job] = append(runsOf[r.job], r)
	}
	for _, sp := range w.specs {
		answers := w.answers[sp.key]
		created := 0
		for _, a := range answers {
			if a.id != answers[0].id {
				h.errorf("workflow %s: its idempotency key answered with two workflows, %s and %s", sp.key, answers[0].id, a.id)
			}
			if a.created {
				created++
			}
		}
		ds := w.byKey[sp.key]
		switch {
		case len(answers) == 0:
			h.errorf("workflow %s was never submitted", sp.key)
			continue
		case created > 1:
			h.errorf("workflow %s was created %d times", sp.key, created)
		case len(ds) == 0 || ds[0].ID != answers[0].id:
			h.errorf("workflow %s: answered %s, the store holds %d workflows of its key", sp.key, answers[0].id, len(ds))
			continue
		}
		c.workflows++
		ev.checkWorkflow(h, sp, ds[0], runsOf, &c)
	}
	return c
}

// checkWorkflow checks one workflow: see checkWorkflows.
func (ev *evidence) checkWorkflow(h *harness, sp wfSpec, d *store.WorkflowDetail, runsOf map[uuid.UUID][]execution, c *wfChecked) {
	want, wantState := sp.expected()
	c.states[string(d.State)]++
	if d.State != wantState || d.FinishedAt == nil {
		h.errorf("workflow %s (%s): %s (finished at %v), want %s", sp.key, d.ID, d.State, d.FinishedAt, wantState)
	}
	if n := len(d.Events); n == 0 || string(d.Events[n-1].Kind) != string(d.State) {
		h.errorf("workflow %s: its journal %v does not end with its state %s", sp.key, d.Events, d.State)
	}
	counts := store.CountTasks(d.Tasks)
	if d.Succeeded != counts[job.StateSucceeded] || d.Failed != counts[job.StateFailed] || d.Canceled != counts[job.StateCanceled] || d.TaskCount != len(d.Tasks) {
		h.errorf("workflow %s: counters %d/%d/%d of %d, its tasks %v", sp.key, d.Succeeded, d.Failed, d.Canceled, d.TaskCount, counts)
	}
	if len(d.Tasks) != len(sp.tasks) {
		h.errorf("workflow %s has %d tasks, want %d", sp.key, len(d.Tasks), len(sp.tasks))
		return
	}
	byRef := make(map[string]*job.Job, len(d.Tasks))
	refOf := make(map[uuid.UUID]string, len(d.Tasks))
	for _, t := range d.Tasks {
		byRef[t.Ref], refOf[t.ID] = t, t.Ref
	}
	edges := make(map[string][]string)
	for _, e := range d.Edges {
		edges[refOf[e.Task]] = append(edges[refOf[e.Task]], refOf[e.DependsOn])
	}
	for _, pt := range sp.tasks {
		t := byRef[pt.ref]
		if t == nil {
			h.errorf("workflow %s has no task %q", sp.key, pt.ref)
			continue
		}
		c.tasks++
		c.taskStates[string(t.State)]++
		got, wantDeps := slices.Sorted(slices.Values(edges[pt.ref])), slices.Sorted(slices.Values(pt.deps))
		if !slices.Equal(got, wantDeps) {
			h.errorf("workflow %s: task %s depends on %v, want %v", sp.key, pt.ref, got, wantDeps)
		}
		if t.State != want[pt.ref] {
			h.errorf("workflow %s: task %s (%s, %s, run_on %s) is %s, want %s (last error %q)", sp.key, pt.ref, t.Queue, pt.spec.mode, pt.runOn, t.State, want[pt.ref], t.LastError)
		}
		ev.checkTask(h, sp.key, pt, t, byRef, runsOf[t.ID], c)
	}
}

// finalOf is the transition that made a job final, its last such one.
func finalOf(trs []transition) (transition, bool) {
	for i := len(trs) - 1; i >= 0; i-- {
		if job.State(trs[i].to).Final() {
			return trs[i], true
		}
	}
	return transition{}, false
}

// checkTask checks one task against its dependencies, from the
// database's record (the transitions, timed by their commits and named
// by their transactions) and the workers' records.
func (ev *evidence) checkTask(h *harness, key string, pt wfTask, t *job.Job, byRef map[string]*job.Job, runs []execution, c *wfChecked) {
	what := fmt.Sprintf("workflow %s: task %s (%s)", key, pt.ref, t.ID)
	trs := ev.transitions[t.ID]
	var deps []transition // the dependencies' final transitions
	for _, ref := range pt.deps {
		f, ok := finalOf(ev.transitions[byRef[ref].ID])
		if !ok {
			h.errorf("%s: its dependency %s never ended in the database's record", what, ref)
			return
		}
		deps = append(deps, f)
	}
	var releases []transition
	for _, tr := range trs {
		if tr.from == string(job.StateWaiting) {
			releases = append(releases, tr)
		}
	}
	switch {
	case len(pt.deps) == 0 && len(releases) > 0:
		h.errorf("%s has no dependency, yet left the waiting state", what)
	case len(pt.deps) > 0 && len(releases) != 1:
		h.errorf("%s left the waiting state %d times, want once", what, len(releases))
	case len(pt.deps) > 0:
		r := releases[0]
		c.releases++
		in := slices.IndexFunc(deps, func(d transition) bool { return d.xid == r.xid })
		if in < 0 {
			h.errorf("%s was %s in transaction %s, in which none of its dependencies ended", what, r.to, r.xid)
		}
		if r.to == string(job.StateQueued) {
			for i, d := range deps {
				if d.committed.After(r.committed) {
					h.errorf("%s was released (committed %s) before its dependency %s ended (%s, committed %s)", what,
						stamp(r.committed), pt.deps[i], d.to, stamp(d.committed))
				}
				if pt.runOn == job.RunOnSuccess && d.to != string(job.StateSucceeded) {
					h.errorf("%s runs on success, yet was released though its dependency %s ended %s", what, pt.deps[i], d.to)
				}
			}
		}
	}
	// Never claimed, nor run, before each dependency ended.
	for _, tr := range trs {
		if tr.to != string(job.StateRunning) {
			continue
		}
		c.ordered++
		for i, d := range deps {
			if tr.committed.Before(d.committed) {
				h.errorf("%s: claimed (attempt %d by %s, committed %s) before its dependency %s ended (committed %s)", what,
					tr.attempt, tr.owner, stamp(tr.committed), pt.deps[i], stamp(d.committed))
			}
		}
	}
	for _, run := range runs {
		c.ordered++
		for i, d := range deps {
			if run.start < d.committed.UnixMicro() {
				h.errorf("%s: %s ran attempt %d from %s, before its dependency %s ended (committed %s)", what,
					run.who, run.attempt, stamp(time.UnixMicro(run.start)), pt.deps[i], stamp(d.committed))
			}
		}
	}
	// Canceled by a dependency: it names one that did not succeed, and
	// never ran.
	if t.State == job.StateCanceled {
		dep := ""
		for ref, j := range byRef {
			if j.ID == t.CanceledBy {
				dep = ref
			}
		}
		switch {
		case dep == "" || !slices.Contains(pt.deps, dep):
			h.errorf("%s is canceled, by %s, which is none of its dependencies %v", what, t.CanceledBy, pt.deps)
		case byRef[dep].State == job.StateSucceeded:
			h.errorf("%s was canceled by its dependency %s, which succeeded", what, dep)
		case !strings.Contains(t.LastError, fmt.Sprintf("dependency %q", dep)):
			h.errorf("%s was canceled by %s, but its error says %q", what, dep, t.LastError)
		}
		if len(runs) > 0 || slices.ContainsFunc(trs, func(tr transition) bool { return tr.to == string(job.StateRunning) }) {
			h.errorf("%s was canceled by its dependency %s, yet it ran", what, dep)
		}
	}
}

func stamp(t time.Time) string { return t.Format("15:04:05.000000") }
