package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/observe"
)

// Retry delays after a store error: doubling from retryMin to retryMax.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// callTimeout bounds each store call of the engine's own loops: a
// database that hangs (rather than failing) must not hang the engine or
// its shutdown. Calls that time out are retried like failed ones.
const callTimeout = 30 * time.Second

func nextRetry(d time.Duration) time.Duration { return min(2*d, retryMax) }

// health logs a loop's failures once per change of state, not once per
// attempt: the first error, then the recovery. One goroutine owns each.
type health struct {
	log     *slog.Logger
	what    string
	attrs   []any
	failing bool
	// point, when set, reports each change.
	point *observe.Point[healthChange]
}

func (h *health) fail(err error) {
	if h.failing {
		return
	}
	h.failing = true
	h.log.Error("engine: "+h.what+" failing; retrying with backoff", append(h.attrs, "err", err)...)
	h.fire()
}

func (h *health) ok() {
	if !h.failing {
		return
	}
	h.failing = false
	h.log.Info("engine: "+h.what+" recovered", h.attrs...)
	h.fire()
}

func (h *health) fire() {
	if h.point != nil {
		h.point.Report(healthChange{What: h.what, Failing: h.failing})
	}
}

// sleep waits d on c; false when ctx ended first.
func sleep(ctx context.Context, c clock.Clock, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}
