package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// Held is a running job whose lease a driver found still held, read with
// its row locked in the transaction that will apply the decision: the
// lease that fences the write (its ID and Token), the job's queue (for
// wake-ups), its facts (LeaseOwner is the row's lease_owner) and, for a
// workflow task, its workflow (for the workflow step).
type Held struct {
	Lease
	Queue string
	job.Facts
	// Task is the workflow and ref of a workflow task; zero for a job
	// outside any workflow.
	Task WorkflowTask
}

// OwnerOf is the owner that fences l in a batch whose caller is owner:
// the lease's own, or else the caller's ("" for none).
func OwnerOf(l Lease, owner string) string {
	if l.Owner != "" {
		return l.Owner
	}
	return owner
}

// Decided is a transition decided for a held job, for a driver to apply
// fenced by its lease: state running and the lease token. Alert is the
// outbox event it records with it (AlertOf), "" for none. Outcome is the
// holder's outcome that decided it, which the driver makes the row
// remember (the lease token, Outcome and the row's lease owner: see
// JobFinish); "" for a transition no holder reported (a rescue, a
// time-out), which leaves what the row remembers as it is.
type Decided struct {
	Lease
	Queue string
	job.Transition
	Alert   string
	Outcome OutcomeStatus
	// Task is the held job's workflow and ref (Held.Task).
	Task WorkflowTask
}

// DecideFinish decides what each outcome does (job.Finish), at now, given
// the jobs whose leases are held (state running, token current: a
// driver's fence). Results are in the order of outcomes; an outcome whose
// lease is not held, whose Owner (when not empty) is not the held job's
// lease owner, or whose lease an earlier outcome of the batch already
// used (the first wins), is Lost and decides nothing. outcomes must have
// passed CheckOutcomes.
func DecideFinish(outcomes []Outcome, held []Held, now time.Time) ([]Decided, []FinishResult, error) {
	byLease := make(map[Lease]Held, len(held))
	for _, h := range held {
		byLease[h.key()] = h
	}
	decided := make([]Decided, 0, len(held))
	results := make([]FinishResult, len(outcomes))
	used := make(map[Lease]bool, len(held))
	for i, o := range outcomes {
		k := o.key()
		h, ok := byLease[k]
		if !ok || used[k] || (o.Owner != "" && o.Owner != h.LeaseOwner) {
			results[i] = FinishResult{Lost: true}
			continue
		}
		used[k] = true
		rep := o.Outcome
		if o.Backoff != nil && o.Status == OutcomeFailed && o.Retryable && o.Throttle == 0 {
			rep.RetryDelay = o.Backoff(h.Queue, h.Attempt)
		}
		t, err := job.Finish(h.Facts, rep, now)
		if err != nil {
			return nil, nil, fmt.Errorf("finish job %s: %w", o.ID, err)
		}
		decided = append(decided, Decided{Lease: h.Lease, Queue: h.Queue, Transition: t, Alert: AlertOf(t), Outcome: o.Status, Task: h.Task})
		results[i] = resultOf(t)
	}
	return decided, results, nil
}

// Accepted is what a job's row remembers of the last outcome a call of
// JobFinish applied to it (see JobFinish), read with its current state.
type Accepted struct {
	// ID is the job; Token the lease token of the attempt whose outcome
	// was applied.
	ID, Token uuid.UUID
	// Status is the outcome's; Owner the lease owner that held the
	// attempt ("" for none).
	Status OutcomeStatus
	Owner  string
	// State is the job's current state.
	State job.State
}

// LostLeases returns the leases of the outcomes that results report Lost,
// whose rows a driver reads (their Accepted) for MarkRepeats; nil when
// none is lost.
func LostLeases(outcomes []Outcome, results []FinishResult) []Lease {
	var lost []Lease
	for i, r := range results {
		if r.Lost {
			lost = append(lost, outcomes[i].key())
		}
	}
	return lost
}

// MarkRepeats turns into repeats the lost results (LostLeases) whose
// outcome repeats the one its job's row remembers (accepted): the same
// job and lease token, the same status, and, when the outcome names an
// owner, the same owner. Such a result reports Repeat, with the job's
// current state. An outcome whose lease an earlier outcome of the batch
// used stays Lost, whatever the row remembers.
func MarkRepeats(outcomes []Outcome, results []FinishResult, accepted []Accepted) {
	if len(accepted) == 0 {
		return
	}
	byLease := make(map[Lease]Accepted, len(accepted))
	for _, a := range accepted {
		byLease[Lease{ID: a.ID, Token: a.Token}] = a
	}
	used := make(map[Lease]bool, len(outcomes))
	for i, o := range outcomes {
		k := o.key()
		if used[k] {
			continue
		}
		used[k] = true
		a, ok := byLease[k]
		if !results[i].Lost || !ok || a.Status != o.Status || (o.Owner != "" && o.Owner != a.Owner) {
			continue
		}
		results[i] = FinishResult{Repeat: true, State: a.State}
	}
}

// DecideRescue decides what becomes of held jobs whose leases expired
// (job.Rescue), at now.
func DecideRescue(held []Held, now time.Time) ([]Decided, error) {
	decided := make([]Decided, len(held))
	for i, h := range held {
		t, err := job.Rescue(h.Facts, now)
		if err != nil {
			return nil, fmt.Errorf("rescue job %s: %w", h.ID, err)
		}
		decided[i] = Decided{Lease: h.Lease, Queue: h.Queue, Transition: t, Alert: AlertOf(t), Task: h.Task}
	}
	return decided, nil
}

// DecideTimeOut decides what becomes of held jobs whose attempts passed
// their deadline (job.TimeOut), at now; retryDelay (nil for none) times
// the retries.
func DecideTimeOut(held []Held, now time.Time, retryDelay func(queue string, attempt int) time.Duration) ([]Decided, error) {
	decided := make([]Decided, len(held))
	for i, h := range held {
		var delay time.Duration
		if retryDelay != nil {
			delay = retryDelay(h.Queue, h.Attempt)
		}
		t, err := job.TimeOut(h.Facts, now, delay)
		if err != nil {
			return nil, fmt.Errorf("time out job %s: %w", h.ID, err)
		}
		decided[i] = Decided{Lease: h.Lease, Queue: h.Queue, Transition: t, Alert: AlertOf(t), Task: h.Task}
	}
	return decided, nil
}

// DecideRerun decides a rerun of cur, read with its row locked, at now
// (job.Rerun), checking the new args of params first (job.RerunArgs;
// maxArgs as for an insert). write is false for a rerun that changes
// nothing. A workflow's task is never re-run (job.ErrWrongState): its
// dependents consumed its result; retry it, or its workflow, instead.
func DecideRerun(cur *job.Job, params RerunParams, now time.Time, maxArgs int) (t job.Transition, write bool, err error) {
	if cur.WorkflowID != uuid.Nil {
		return job.Transition{}, false, fmt.Errorf("job %s is a task of workflow %s: retry it, or the workflow, instead of a rerun: %w",
			cur.ID, cur.WorkflowID, job.ErrWrongState)
	}
	var (
		args json.RawMessage
		hash string
		same = true
	)
	if params.Args != nil {
		if args, hash, same, err = job.RerunArgs(cur, params.Args, maxArgs); err != nil {
			return job.Transition{}, false, err
		}
	}
	return job.Rerun(job.FactsOf(cur), now, args, hash, same)
}

// SucceededOnce reports whether outcomes are all successes of distinct
// leases: the hot path of JobFinish, which a driver may apply without
// reading the rows first (see job.SucceededState).
func SucceededOnce(outcomes []Outcome) bool {
	seen := make(map[uuid.UUID]bool, len(outcomes))
	for _, o := range outcomes {
		if o.Status != OutcomeSucceeded || seen[o.ID] {
			return false
		}
		seen[o.ID] = true
	}
	return true
}

// resultOf is what JobFinish reports of an applied transition.
func resultOf(t job.Transition) FinishResult {
	r := FinishResult{State: t.State}
	if t.State == job.StateQueued {
		r.RunAt = t.RunAt
	}
	return r
}

// Throttle is the throttle a decided transition sets (job.Outcome.Throttle):
// no job of the queue of job ID, or of its partition when the queue's
// flow.Limits.ThrottleBy says so, starts before Until. A driver applies
// it in the transaction that applies the transition.
type Throttle struct {
	ID    uuid.UUID
	Queue string
	Until time.Time
}

// ThrottlesOf returns the throttles decided transitions set: one per job
// that goes back to its queue throttled (job.EventThrottled), until its
// new run_at. A canceled job sets none (a cancel request wins).
func ThrottlesOf(decided []Decided) []Throttle {
	var out []Throttle
	for _, d := range decided {
		if d.State == job.StateQueued && d.Event.Kind == job.EventThrottled {
			out = append(out, Throttle{ID: d.ID, Queue: d.Queue, Until: d.RunAt})
		}
	}
	return out
}
