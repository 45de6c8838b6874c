package jobd

import (
	"context"

	"github.com/jobd/jobd/step"
)

// Step runs the step name of the job whose handler ctx is: on a later
// attempt of the same job a step that succeeded returns its recorded
// result without running again (see package step, which the engine's
// engine.Step and the Go SDK's client.Step forward to as this does, and
// docs/steps-and-children.md). Engine users may import either; a remote
// worker imports client, which leaves the server out of its build.
func Step[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	return step.Run(ctx, name, fn)
}
