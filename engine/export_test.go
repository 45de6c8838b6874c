package engine

import (
	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/maintenance"
	"github.com/jobd/jobd/internal/testsignal"
)

// HealthChange is what HealthSignal reports.
type HealthChange = healthChange

// The engine's test signals (signals.go), for the external tests.
// Initialise them before the engine runs.

func OutcomeLostSignal(e *Engine) *testsignal.Signal[uuid.UUID]    { return &e.signals.outcomeLost }
func OutcomeDroppedSignal(e *Engine) *testsignal.Signal[uuid.UUID] { return &e.signals.outcomeDropped }
func PollArmedSignal(e *Engine) *testsignal.Signal[string]         { return &e.signals.pollArmed }
func TimedOutSignal(e *Engine) *testsignal.Signal[uuid.UUID]       { return &e.signals.timedOut }
func AbandonedSignal(e *Engine) *testsignal.Signal[uuid.UUID]      { return &e.signals.abandoned }
func HealthSignal(e *Engine) *testsignal.Signal[HealthChange]      { return &e.signals.health }
func FlowReadSignal(e *Engine) *testsignal.Signal[struct{}]        { return &e.signals.flowRead }
func MaintenanceSignals(e *Engine) *maintenance.TestSignals        { return e.runner.TestSignals() }
