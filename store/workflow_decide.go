package store

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// The workflow step, decided here for every driver (the rules are
// package job's, task.go): a driver reads the facts of the tasks and
// workflows a transaction changes, with their rows locked, in that
// transaction, and applies what these functions decide in it.

// TaskNode is a workflow task as the workflow step reads it: its row's
// facts (locked), its ref, queue, run_on, pending count, run_at and the
// dependency that canceled it.
type TaskNode struct {
	ID         uuid.UUID
	WorkflowID uuid.UUID
	Ref        string
	Queue      string
	RunOn      job.RunOn
	Pending    int
	RunAt      time.Time
	CanceledBy uuid.UUID
	job.Facts
}

// TaskEnd is a task whose state a transaction changes from From to State
// where one of them is final: it ends (to a final state), or it is
// retried or restored (from one). Ends change their workflow's counters,
// and their dependents.
type TaskEnd struct {
	ID         uuid.UUID
	WorkflowID uuid.UUID
	Ref        string
	From       job.State
	State      job.State
	// Parent is the job that spawned it, for a child (see children.go);
	// the zero UUID otherwise. A child outside workflows has no
	// WorkflowID: only its parent's step follows its end.
	Parent uuid.UUID
}

// Ended reports whether e takes its task to a final state from one that
// is not.
func (e TaskEnd) Ended() bool { return e.State.Final() && !e.From.Final() }

// TaskDecided is a decided transition of a task the workflow step
// changes (not a lease holder's: see Decided), for a driver to apply
// fenced by its state (From); its row is locked.
type TaskDecided struct {
	ID    uuid.UUID
	Queue string
	job.Transition
}

// WorkflowDecided is a decided change of a workflow's row.
type WorkflowDecided struct {
	ID   uuid.UUID
	Name string
	job.WorkflowTransition
}

// DecidePropagate decides what the ends (tasks that became final in this
// transaction, in order) do to their dependents, at now: nodes are the
// tasks the step may change, read with their rows locked (every direct
// dependent of an end, and every dependent of a task the dependency rule
// may cancel: see the drivers' reads), edges the dependencies into them
// (an edge given twice counts once).
// It returns the dependents' transitions (job.DependenciesEnded), and the
// ends of the tasks it canceled, which propagate in turn, after ends.
// A dependent not waiting (final, or queued by an earlier release) is
// left alone.
func DecidePropagate(ends []TaskEnd, nodes []TaskNode, edges []Edge, now time.Time) ([]TaskDecided, []TaskEnd, error) {
	byID := make(map[uuid.UUID]*TaskNode, len(nodes))
	for i := range nodes {
		byID[nodes[i].ID] = &nodes[i]
	}
	children := make(map[uuid.UUID][]uuid.UUID)
	seen := make(map[Edge]bool, len(edges))
	for _, e := range edges {
		if !seen[e] { // a walk may meet an edge twice
			seen[e] = true
			children[e.DependsOn] = append(children[e.DependsOn], e.Task)
		}
	}
	type decision struct {
		pending int
		failed  *job.Dependency
		t       job.Transition
		order   int
	}
	decided := make(map[uuid.UUID]*decision)
	queue := slices.Clone(ends)
	var cascade []TaskEnd
	for next := 0; next < len(queue); next++ {
		end := queue[next]
		if !end.Ended() {
			continue
		}
		for _, c := range children[end.ID] {
			n, ok := byID[c]
			if !ok {
				return nil, nil, fmt.Errorf("workflow step: dependent %s of task %s was not read", c, end.ID)
			}
			d := decided[c]
			if d == nil {
				if n.State != job.StateWaiting {
					continue
				}
				d = &decision{pending: n.Pending, order: len(decided)}
				decided[c] = d
			} else if d.t.State != job.StateWaiting {
				continue // canceled or released by an earlier end of the batch
			}
			d.pending--
			if end.State != job.StateSucceeded && d.failed == nil {
				d.failed = &job.Dependency{ID: end.ID, Ref: end.Ref, State: end.State}
			}
			t, err := job.DependenciesEnded(n.Facts, n.RunOn, d.pending, d.failed, n.RunAt, now)
			if err != nil {
				return nil, nil, fmt.Errorf("task %s: %w", c, err)
			}
			d.t = t
			if t.State.Final() {
				ce := TaskEnd{ID: c, WorkflowID: n.WorkflowID, Ref: n.Ref, From: job.StateWaiting, State: t.State}
				queue = append(queue, ce)
				cascade = append(cascade, ce)
			}
		}
	}
	out := make([]TaskDecided, len(decided))
	for id, d := range decided {
		out[d.order] = TaskDecided{ID: id, Queue: byID[id].Queue, Transition: d.t}
	}
	return out, cascade, nil
}

// DecideWorkflows decides what becomes of the workflows (their rows,
// locked) whose tasks ends changed, at now (job.WorkflowTasksChanged),
// with the caller's own journal entries of each (events, by workflow id;
// nil for none). A workflow that nothing changes is left out.
func DecideWorkflows(workflows []job.Workflow, ends []TaskEnd, events map[uuid.UUID][]job.WorkflowEvent, now time.Time) []WorkflowDecided {
	delta := make(map[uuid.UUID]*job.TaskCounts, len(workflows))
	for _, e := range ends {
		c := delta[e.WorkflowID]
		if c == nil {
			c = &job.TaskCounts{}
			delta[e.WorkflowID] = c
		}
		if e.From != e.State {
			c.Count(e.From, -1)
			c.Count(e.State, 1)
		}
	}
	var out []WorkflowDecided
	for i := range workflows {
		w := &workflows[i]
		var d job.TaskCounts
		if c := delta[w.ID]; c != nil {
			d = *c
		}
		if d.Zero() && len(events[w.ID]) == 0 {
			continue
		}
		out = append(out, WorkflowDecided{ID: w.ID, Name: w.Name, WorkflowTransition: job.WorkflowTasksChanged(w, d, events[w.ID], now)})
	}
	return out
}

// EndsOf returns the ends of the decided transitions of held workflow
// tasks and children that take them to a final state: the start of the
// workflow step (and the children's) of JobFinish, JobRescue and
// JobTimeOut. A job outside any workflow that no job spawned (Task zero)
// has none: the step is skipped for it.
func EndsOf(decided []Decided) []TaskEnd {
	var ends []TaskEnd
	for _, d := range decided {
		if (d.Task.WorkflowID != uuid.Nil || d.Task.Parent != uuid.Nil) && d.State.Final() {
			ends = append(ends, TaskEnd{ID: d.ID, WorkflowID: d.Task.WorkflowID, Ref: d.Task.Ref, From: job.StateRunning,
				State: d.State, Parent: d.Task.Parent})
		}
	}
	return ends
}

// WorkflowTask is the workflow and ref of a task, and the parent of a
// child.
type WorkflowTask struct {
	WorkflowID uuid.UUID
	Ref        string
	// Parent is the job that spawned it; the zero UUID for none.
	Parent uuid.UUID
}

// WorkflowEnds returns the ends of ends that are workflow tasks': those
// the workflow step follows.
func WorkflowEnds(ends []TaskEnd) []TaskEnd {
	var out []TaskEnd
	for _, e := range ends {
		if e.WorkflowID != uuid.Nil {
			out = append(out, e)
		}
	}
	return out
}

// RetryPlan is a workflow's tasks and edges as a retry reads them, for
// DecideRetry.
type RetryPlan struct {
	Tasks []TaskNode
	Edges []Edge
}

// Candidates returns the tasks a retry of the tasks retry (ids) may
// change, for a driver to lock before it reads the plan again: those
// tasks, and every task the dependency rule canceled that depends on
// one of them, directly or not.
func (p RetryPlan) Candidates(retry []uuid.UUID) []uuid.UUID {
	children := make(map[uuid.UUID][]uuid.UUID)
	for _, e := range p.Edges {
		children[e.DependsOn] = append(children[e.DependsOn], e.Task)
	}
	byID := make(map[uuid.UUID]*TaskNode, len(p.Tasks))
	for i := range p.Tasks {
		byID[p.Tasks[i].ID] = &p.Tasks[i]
	}
	seen := make(map[uuid.UUID]bool)
	var out []uuid.UUID
	queue := slices.Clone(retry)
	for _, id := range retry {
		seen[id] = true
	}
	for next := 0; next < len(queue); next++ {
		id := queue[next]
		out = append(out, id)
		for _, c := range children[id] {
			if n := byID[c]; n != nil && !seen[c] && n.State == job.StateCanceled && n.CanceledBy != uuid.Nil {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	slices.SortFunc(out, func(a, b uuid.UUID) int { return compareUUID(a, b) })
	return out
}

// RetryableTasks returns the tasks of p that a workflow retry retries:
// the failed ones and those canceled but by the dependency rule (which
// the retry restores).
func (p RetryPlan) RetryableTasks() []uuid.UUID {
	var out []uuid.UUID
	for _, t := range p.Tasks {
		if t.State == job.StateFailed || t.State == job.StateCanceled && t.CanceledBy == uuid.Nil {
			out = append(out, t.ID)
		}
	}
	return out
}

// DecideRetry decides a retry of the tasks retry of the workflow p
// reads (its tasks' facts, read after the driver locked the Candidates),
// at now: each in retry is retried (job.RetryTask: queued, or waiting
// for its dependencies not final), and each task the dependency rule
// canceled that depends on a retried or restored task is restored
// (job.Restore) unless a dependency it needs is still failed or
// canceled; tasks are taken each after its dependencies. An error of
// job.RetryTask (a retried task behind a failed dependency) fails the
// decision. It returns the transitions and the ends (retries and
// restores, for the workflow's counters).
func DecideRetry(p RetryPlan, retry []uuid.UUID, now time.Time) ([]TaskDecided, []TaskEnd, error) {
	byID := make(map[uuid.UUID]*TaskNode, len(p.Tasks))
	for i := range p.Tasks {
		byID[p.Tasks[i].ID] = &p.Tasks[i]
	}
	parents := make(map[uuid.UUID][]uuid.UUID)
	for _, e := range p.Edges {
		parents[e.Task] = append(parents[e.Task], e.DependsOn)
	}
	state := make(map[uuid.UUID]job.State, len(p.Tasks))
	for _, t := range p.Tasks {
		state[t.ID] = t.State
	}
	retried := make(map[uuid.UUID]bool, len(retry))
	for _, id := range retry {
		if byID[id] == nil {
			return nil, nil, fmt.Errorf("retry task %s: not read: %w", id, job.ErrNotFound)
		}
		retried[id] = true
	}
	candidates := make(map[uuid.UUID]bool)
	for _, id := range p.Candidates(retry) {
		candidates[id] = true
	}
	var (
		decided []TaskDecided
		ends    []TaskEnd
	)
	for _, id := range topoOrder(p) {
		n := byID[id]
		if !candidates[id] {
			continue
		}
		pending, blocked, restoredBy := 0, (*job.Dependency)(nil), ""
		for _, pid := range parents[id] {
			pn, st := byID[pid], state[pid]
			switch {
			case !st.Final():
				pending++
				if restoredBy == "" || pid == n.CanceledBy {
					restoredBy = pn.Ref
				}
			case st != job.StateSucceeded && blocked == nil:
				blocked = &job.Dependency{ID: pid, Ref: pn.Ref, State: st}
			}
		}
		var (
			t   job.Transition
			err error
		)
		switch {
		case retried[id]:
			t, err = job.RetryTask(n.Facts, n.RunOn, pending, blocked, now)
		case n.State != job.StateCanceled || n.CanceledBy == uuid.Nil || restoredBy == "" || blocked != nil && n.RunOn != job.RunOnAny:
			continue // not the dependency rule's, or still in its way
		default:
			t, err = job.Restore(n.Facts, pending, restoredBy, now)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("task %q: %w", n.Ref, err)
		}
		state[id] = t.State
		decided = append(decided, TaskDecided{ID: id, Queue: n.Queue, Transition: t})
		ends = append(ends, TaskEnd{ID: id, WorkflowID: n.WorkflowID, Ref: n.Ref, From: n.State, State: t.State})
	}
	return decided, ends, nil
}

// topoOrder returns the ids of p's tasks each after its dependencies
// (Kahn's algorithm, ready tasks by id).
func topoOrder(p RetryPlan) []uuid.UUID {
	pending := make(map[uuid.UUID]int, len(p.Tasks))
	children := make(map[uuid.UUID][]uuid.UUID)
	for _, e := range p.Edges {
		pending[e.Task]++
		children[e.DependsOn] = append(children[e.DependsOn], e.Task)
	}
	var order []uuid.UUID
	for _, t := range p.Tasks {
		if pending[t.ID] == 0 {
			order = append(order, t.ID)
		}
	}
	slices.SortFunc(order, compareUUID)
	for next := 0; next < len(order); next++ {
		for _, c := range children[order[next]] {
			if pending[c]--; pending[c] == 0 {
				order = append(order, c)
			}
		}
	}
	return order
}

func compareUUID(a, b uuid.UUID) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

// DecideCancel decides a workflow's cancel (job.CancelTask) of its tasks
// that are not final (their rows locked): waiting and queued ones
// canceled, running ones asked to stop. It returns the transitions to
// write (none for a task asked already) and the ends of the tasks it
// canceled.
func DecideCancel(tasks []TaskNode, now time.Time) ([]TaskDecided, []TaskEnd, error) {
	var (
		decided []TaskDecided
		ends    []TaskEnd
	)
	for _, n := range tasks {
		t, write, err := job.CancelTask(n.Facts, now)
		if err != nil {
			return nil, nil, fmt.Errorf("task %q: %w", n.Ref, err)
		}
		if !write {
			continue
		}
		decided = append(decided, TaskDecided{ID: n.ID, Queue: n.Queue, Transition: t})
		if t.State.Final() {
			ends = append(ends, TaskEnd{ID: n.ID, WorkflowID: n.WorkflowID, Ref: n.Ref, From: n.State, State: t.State})
		}
	}
	return decided, ends, nil
}
