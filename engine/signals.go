package engine

import (
	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/testsignal"
)

// testSignals are the points of the engine that its tests wait for (see
// package internal/testsignal); they cost nothing unless a test
// initialises them (export_test.go).
type testSignals struct {
	// outcomeLost fires for each outcome the store refused because the
	// lease was no longer held.
	outcomeLost testsignal.Signal[uuid.UUID]
	// outcomeDropped fires for each job whose handler returned after the
	// shutdown had released its job.
	outcomeDropped testsignal.Signal[uuid.UUID]
	// timedOut fires for each job whose handler stopped at its deadline
	// (its outcome left to the reaper); abandoned for each handler given
	// up past its deadline and the grace.
	timedOut  testsignal.Signal[uuid.UUID]
	abandoned testsignal.Signal[uuid.UUID]
	// pollArmed fires, with the queue, each time a producer has claimed
	// and armed its next poll.
	pollArmed testsignal.Signal[string]
	// health fires when a loop starts failing or recovers.
	health testsignal.Signal[healthChange]
	// flowRead fires each time the view of the queues' flow control was
	// read from the store.
	flowRead testsignal.Signal[struct{}]
}

// healthChange is a loop of the engine starting to fail (Failing) or
// recovering, as its log says once per change.
type healthChange struct {
	What    string // the loop: "claim", "lease heartbeat"…
	Failing bool
}
