package engine

import (
	"github.com/google/uuid"

	"github.com/jobd/jobd/observe"
)

// points are where the engine reports what its tests wait for
// (observe.Point): inert unless something attaches to them, as the tests
// do (internal/testutil/testsignal).
type points struct {
	// outcomeLost reports for each outcome the store refused because the
	// lease was no longer held.
	outcomeLost observe.Point[uuid.UUID]
	// outcomeDropped reports for each job whose handler returned after the
	// shutdown had released its job.
	outcomeDropped observe.Point[uuid.UUID]
	// timedOut reports for each job whose handler stopped at its deadline
	// (its outcome left to the reaper); abandoned for each handler given
	// up past its deadline and the grace.
	timedOut  observe.Point[uuid.UUID]
	abandoned observe.Point[uuid.UUID]
	// pollArmed reports, with the queue, each time a producer has claimed
	// and armed its next poll.
	pollArmed observe.Point[string]
	// health reports when a loop starts failing or recovers.
	health observe.Point[healthChange]
	// flowRead reports each time the view of the queues' flow control was
	// read from the store.
	flowRead observe.Point[struct{}]
}

// healthChange is a loop of the engine starting to fail (Failing) or
// recovering, as its log says once per change.
type healthChange struct {
	What    string // the loop: "claim", "lease heartbeat"…
	Failing bool
}
