// Package ops holds the operator's actions that more than one front end
// performs (the HTTP API and the dashboard), so that each rule has one
// home and both call it. The actions that are one store call (cancel,
// retry, a worker's disable, enable and delete) are called on the store
// directly by both.
package ops

import (
	"context"
	"fmt"

	"github.com/jobd/jobd/store"
)

// SetQueuePaused pauses or resumes queue on every node; an unknown queue
// is created. Resuming also wakes the queue's idle workers, on every
// node, so that they claim at once rather than at their next poll.
func SetQueuePaused(ctx context.Context, ex store.Executor, queue string, paused bool) error {
	if err := ex.QueueSetPaused(ctx, queue, paused); err != nil {
		return err
	}
	if paused {
		return nil
	}
	if err := ex.Wake(ctx, queue); err != nil {
		return fmt.Errorf("wake queue %q: %w", queue, err)
	}
	return nil
}
