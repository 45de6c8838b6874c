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

// How Listen and LeaderWatch reconnect after their connection failed:
// every reconnectFast while the outage is younger than reconnectFastFor,
// so that a database that restarts is listened to again within
// reconnectFast of answering; then with a backoff that doubles up to
// reconnectSlowMax, for an outage that lasts.
const (
	reconnectFast    = 25 * time.Millisecond
	reconnectFastFor = 10 * time.Second
	reconnectSlowMax = 5 * time.Second
)

// reconnector paces the attempts to reconnect during one outage. The
// waits are in real time, whatever the store's clock: they pace attempts
// to reach a real server, and a fake clock that nobody advances would
// stall them for good.
type reconnector struct {
	since time.Time     // the outage's start; zero while connected
	slow  time.Duration // the current backoff, once past reconnectFastFor
}

// wait waits before the next attempt, or until ctx ends (false).
func (r *reconnector) wait(ctx context.Context) bool {
	now := time.Now()
	if r.since.IsZero() {
		r.since, r.slow = now, 0
	}
	d := reconnectFast
	if now.Sub(r.since) >= reconnectFastFor {
		r.slow = min(max(2*r.slow, reconnectFast), reconnectSlowMax)
		d = r.slow
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// connected ends the outage.
func (r *reconnector) connected() { r.since = time.Time{} }

// outage is how long the current outage has lasted.
func (r *reconnector) outage() time.Duration { return time.Since(r.since) }

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
// reconnects (see reconnector: every 25 ms for the first 10 s of an
// outage), and once it listens again it calls notify(Notification{})
// since notifications may have been missed meanwhile: the workers claim
// at once, without waiting for their poll.
//
// Without a dedicated connection (a URL through a transaction pooler and
// no Options.ListenURL) it listens to nothing, says so once, and returns
// when ctx ends: the nodes then find jobs at their poll.
func (s *Store) Listen(ctx context.Context, notify func(store.Notification)) error {
	if s.direct == nil {
		s.logger.Warn("jobd: no LISTEN: the database URL goes through a transaction pooler and no listen URL (--listen-database) reaches PostgreSQL directly; workers find new jobs at their poll (--poll-interval)")
		<-ctx.Done()
		return nil
	}
	var r reconnector
	missed := false // a connection failed: notifications may have been lost
	for {
		err := s.listen(ctx, func() {
			if missed {
				s.logger.Info("jobd: listening for notifications again", "after", r.outage().Round(time.Millisecond))
				notify(store.Notification{})
			}
			missed = false
			r.connected()
		}, notify)
		if ctx.Err() != nil {
			return nil
		}
		if !missed {
			s.logger.Warn("jobd: listen for notifications failed, reconnecting", "err", err)
		}
		missed = true
		if !r.wait(ctx) {
			return nil
		}
	}
}

// listen runs one connection until it fails or ctx ends, calling listening
// once LISTEN is in effect.
func (s *Store) listen(ctx context.Context, listening func(), notify func(store.Notification)) error {
	conn, err := pgx.ConnectConfig(ctx, s.dedicated(listenAppName))
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
