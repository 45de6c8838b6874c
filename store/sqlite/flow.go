package sqlite

import (
	"context"
	"errors"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/store"
)

// errFlowNotBuilt marks the flow-control methods still to be written.
var errFlowNotBuilt = errors.New("sqlite: flow control is not built yet")

// QueueSettings returns every queue's stored settings. See store.Store.
func (s *executor) QueueSettings(ctx context.Context) ([]store.QueueSettings, error) {
	return nil, errFlowNotBuilt
}

// QueueSetLimits replaces a queue's flow control. See store.Store.
func (s *executor) QueueSetLimits(ctx context.Context, queue string, limits flow.Limits) error {
	return errFlowNotBuilt
}
