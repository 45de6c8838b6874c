package engine

import (
	"github.com/google/uuid"

	"github.com/jobd/jobd/engine/internal/maintenance"
	"github.com/jobd/jobd/internal/testutil/testsignal"
)

// HealthChange is what HealthSignal reports.
type HealthChange = healthChange

// The engine's test signals (signals.go), for the external tests.
// Initialise them before the engine runs.

func OutcomeLostSignal(e *Engine) *testsignal.Signal[uuid.UUID] {
	return testsignal.Of(&e.points.outcomeLost)
}
func OutcomeDroppedSignal(e *Engine) *testsignal.Signal[uuid.UUID] {
	return testsignal.Of(&e.points.outcomeDropped)
}
func PollArmedSignal(e *Engine) *testsignal.Signal[string] { return testsignal.Of(&e.points.pollArmed) }
func TimedOutSignal(e *Engine) *testsignal.Signal[uuid.UUID] {
	return testsignal.Of(&e.points.timedOut)
}
func AbandonedSignal(e *Engine) *testsignal.Signal[uuid.UUID] {
	return testsignal.Of(&e.points.abandoned)
}
func HealthSignal(e *Engine) *testsignal.Signal[HealthChange] { return testsignal.Of(&e.points.health) }
func FlowReadSignal(e *Engine) *testsignal.Signal[struct{}]   { return testsignal.Of(&e.points.flowRead) }
func MaintenanceSignals(e *Engine) *maintenance.Points        { return e.runner.Points() }
