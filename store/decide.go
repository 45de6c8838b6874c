package store

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// Held is a running job whose lease a driver found still held, read with
// its row locked in the transaction that will apply the decision: the
// lease that fences the write, the job's queue (for wake-ups) and its
// facts.
type Held struct {
	Lease
	Queue string
	job.Facts
}

// Decided is a transition decided for a held job, for a driver to apply
// fenced by its lease: state running and the lease token.
type Decided struct {
	Lease
	Queue string
	job.Transition
}

// DecideFinish decides what each outcome does (job.Finish), at now, given
// the jobs whose leases are held. Results are in the order of outcomes; an
// outcome whose lease is not held, or whose lease an earlier outcome of
// the batch already used (the first wins), is Lost and decides nothing.
// outcomes must have passed CheckOutcomes.
func DecideFinish(outcomes []Outcome, held map[Lease]Held, now time.Time) ([]Decided, []FinishResult, error) {
	decided := make([]Decided, 0, len(held))
	results := make([]FinishResult, len(outcomes))
	used := make(map[Lease]bool, len(held))
	for i, o := range outcomes {
		h, ok := held[o.Lease]
		if !ok || used[o.Lease] {
			results[i] = FinishResult{Lost: true}
			continue
		}
		used[o.Lease] = true
		t, err := job.Finish(h.Facts, o.Report(), now)
		if err != nil {
			return nil, nil, fmt.Errorf("finish job %s: %w", o.ID, err)
		}
		decided = append(decided, Decided{Lease: o.Lease, Queue: h.Queue, Transition: t})
		results[i] = resultOf(t)
	}
	return decided, results, nil
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
		decided[i] = Decided{Lease: h.Lease, Queue: h.Queue, Transition: t}
	}
	return decided, nil
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
