package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/store"
)

// The notification channels: jobd_wake carries a queue name (wake.sql and
// the writes that make jobs available), or from an insert the queue name
// and a lower bound of the new jobs' claim order (see parseWake);
// jobd_cancel the id of a running job whose cancel was requested
// (cancel.sql).
const (
	wakeChannel   = "jobd_wake"
	cancelChannel = "jobd_cancel"
)

// Listen's reconnection backoff: it doubles from the first to the cap, and
// starts again at the first once a connection is listening.
const (
	listenBackoffFirst = 100 * time.Millisecond
	listenBackoffMax   = 5 * time.Second
)

// Wake tells the workers of queues, on every node, that jobs may be
// available: one pg_notify per queue on the channel jobd_wake.
func (s *executor) Wake(ctx context.Context, queues ...string) error {
	if len(queues) == 0 {
		return nil
	}
	if _, err := s.db.Exec(ctx, wakeSQL, queues); err != nil {
		return errorf("postgres: wake %v: %w", queues, err)
	}
	return nil
}

// Listen calls notify with a Notification for each notification on
// jobd_wake (Queue) and jobd_cancel (CancelJob), from any node, until ctx
// ends; then it returns nil. It holds a dedicated connection, outside the
// pool, listening to both channels. When that connection fails it
// reconnects with backoff, and once it listens again it calls
// notify(Notification{}) since notifications may have been missed
// meanwhile. The backoff waits in real
// time, whatever the store's clock: it paces attempts to reach a real
// server, and a fake clock that nobody advances would stall it for good.
func (s *Store) Listen(ctx context.Context, notify func(store.Notification)) error {
	backoff := listenBackoffFirst
	missed := false // a connection failed: notifications may have been lost
	for {
		err := s.listen(ctx, func() {
			if missed {
				notify(store.Notification{})
			}
			missed = false
			backoff = listenBackoffFirst
		}, notify)
		if ctx.Err() != nil {
			return nil
		}
		missed = true
		s.logger.Warn("jobd: listen for notifications failed, reconnecting", "err", err, "backoff", backoff)
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// listen runs one connection until it fails or ctx ends, calling listening
// once LISTEN is in effect.
func (s *Store) listen(ctx context.Context, listening func(), notify func(store.Notification)) error {
	conn, err := pgx.ConnectConfig(ctx, s.listenTo)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, listenSQL); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		switch n.Channel {
		case wakeChannel:
			notify(parseWake(n.Payload))
		case cancelChannel:
			id, err := uuid.Parse(n.Payload)
			if err != nil {
				s.logger.Warn("jobd: ignoring a malformed cancel notification", "payload", n.Payload, "err", err)
				continue
			}
			notify(store.Notification{CancelJob: id})
		}
	}
}

// wakeBoundSep separates the queue name of an insert's wake-up from the
// bound of its jobs' claim order (insert.sql). It is the unit separator,
// a control character, which no queue name holds.
const wakeBoundSep = "\x1f"

// parseWake reads the payload of a wake-up: a queue name, or a queue
// name, a priority and a run_at in µs since the epoch, separated by
// wakeBoundSep. A bound it cannot read is left out, which only costs the
// claimers a walk from the best job.
func parseWake(payload string) store.Notification {
	queue, bound, ok := strings.Cut(payload, wakeBoundSep)
	if !ok {
		return store.Notification{Queue: payload}
	}
	n := store.Notification{Queue: queue}
	priority, runAt, ok := strings.Cut(bound, wakeBoundSep)
	if !ok {
		return n
	}
	p, perr := strconv.Atoi(priority)
	us, uerr := strconv.ParseInt(runAt, 10, 64)
	if perr == nil && uerr == nil {
		n.Earliest = &store.ClaimBound{Priority: p, RunAt: time.UnixMicro(us)}
	}
	return n
}
