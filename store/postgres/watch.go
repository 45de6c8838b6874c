package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// watchSlice is how long LeaderWatch's connection waits at a time, for a
// lock or idle, before it reads the term's holder again: how late it may
// learn that another node took the term over (a term that ran out).
const watchSlice = time.Second

// errNoDirect is LeaderWatch's answer when the store has no dedicated
// connection.
var errNoDirect = errors.New("postgres: no dedicated connection to PostgreSQL (the database URL goes through a transaction pooler and no listen URL is set): the leader's term alone elects, and a leader that dies is replaced when its term runs out")

// LeaderWatch holds node's presence in leader election name, on a
// dedicated connection, until ctx ends; see maintenance.LeaderWatcher.
//
// The presence is a session advisory lock of the node's own
// (leader_presence.sql), which PostgreSQL frees the moment the
// connection ends, however the node died: SIGKILL, a crash, a cut
// network that the server notices. While another node holds the term
// (jobd_leaders) and its presence, this connection waits for that
// presence's lock; PostgreSQL grants it the moment the leader's
// connection ends, and, holding it, this node takes the term over in one
// statement fenced by the leader it replaces (leader_seize.sql), then
// calls vacated so that the election attempts at once; it calls vacated
// too when the leader it watched resigned. A term whose holder never
// held a presence (a node without a dedicated connection) is left to
// run out. present(true) says that the
// presence is held, present(false) that its connection failed: this node
// must then stop leading, since another may take over at once. It
// reconnects as Listen does (every 25 ms for the first 10 s of an
// outage).
//
// It returns an error at once when the store has no dedicated connection
// (a URL through a transaction pooler without Options.ListenURL), and
// nil when ctx ends.
func (s *Store) LeaderWatch(ctx context.Context, name, node string, ttl time.Duration, present func(bool), vacated func()) error {
	if s.direct == nil {
		return errNoDirect
	}
	var r reconnector
	for {
		held := false
		err := s.watch(ctx, name, node, ttl, func() {
			held = true
			r.connected()
			present(true)
		}, vacated)
		if ctx.Err() != nil {
			return nil
		}
		if held {
			present(false)
			s.logger.Warn("jobd: the leader election's connection failed, reconnecting", "err", err)
		}
		if !r.wait(ctx) {
			return nil
		}
	}
}

// watch runs one connection of LeaderWatch until it fails or ctx ends,
// calling held once it holds node's presence.
func (s *Store) watch(ctx context.Context, name, node string, ttl time.Duration, held, vacated func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.dedicated(leaderAppName))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	// A lock waited for comes back within the slice (55P03), so that the
	// term's holder is read again.
	if _, err := conn.Exec(ctx, "SELECT set_config('lock_timeout', $1, false)", strconv.FormatInt(watchSlice.Milliseconds(), 10)+"ms"); err != nil {
		return fmt.Errorf("lock_timeout: %w", err)
	}
	// The node's own presence: a process of the same node name that died
	// a moment ago may hold it until its connection is gone.
	for {
		got, err := lockPresence(ctx, conn, name, node)
		if err != nil {
			return err
		}
		if got {
			break
		}
	}
	held()
	// seen is the leader whose presence this connection saw held: once
	// it is free, that leader is gone (or its connection failed, which
	// ends its term as well), whenever this connection looks.
	seen := ""
	for {
		leader, err := s.termHolder(ctx, conn, name)
		if err != nil {
			return err
		}
		if leader == "" && seen != "" {
			// The leader resigned (or its term ran out): attempt now.
			seen = ""
			vacated()
		}
		if leader == "" || leader == node {
			if err := idle(ctx, conn); err != nil {
				return err
			}
			continue
		}
		if leader != seen {
			var present bool
			if err := conn.QueryRow(ctx, leaderPresentSQL, name, leader).Scan(&present); err != nil {
				return fmt.Errorf("leader's presence: %w", err)
			}
			if !present {
				// A leader without a presence (no dedicated connection):
				// its term runs out by itself.
				if err := idle(ctx, conn); err != nil {
					return err
				}
				continue
			}
			seen = leader
		}
		gone, err := lockPresence(ctx, conn, name, leader)
		if err != nil {
			return err
		}
		if !gone {
			continue
		}
		if err := s.seize(ctx, conn, name, node, leader, ttl); err != nil {
			return err
		}
		vacated()
	}
}

// lockPresence waits up to the session's lock_timeout for the presence
// lock of node, and reports whether it got it.
func lockPresence(ctx context.Context, conn *pgx.Conn, name, node string) (bool, error) {
	_, err := conn.Exec(ctx, leaderPresenceSQL, name, node)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "57014") {
		return false, nil // lock_not_available, or a statement_timeout
	}
	if err != nil {
		return false, fmt.Errorf("presence lock: %w", err)
	}
	return true, nil
}

// termHolder reads the node whose term of name runs now, "" for none.
func (s *Store) termHolder(ctx context.Context, conn *pgx.Conn, name string) (string, error) {
	var node string
	err := conn.QueryRow(ctx, leaderHolderSQL, s.now(), name).Scan(&node)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("term holder: %w", err)
	}
	return node, nil
}

// seize makes node the leader of name in place of leader, whose presence
// lock this connection holds, then gives that lock back.
func (s *Store) seize(ctx context.Context, conn *pgx.Conn, name, node, leader string, ttl time.Duration) error {
	tag, err := conn.Exec(ctx, leaderSeizeSQL, s.now(), name, node, leader, ttl)
	if err != nil {
		return fmt.Errorf("take the term over: %w", err)
	}
	if tag.RowsAffected() == 1 {
		s.logger.Info("jobd: the leader's connection ended: this node takes its term over", "election", name, "node", node, "leader", leader)
	}
	if _, err := conn.Exec(ctx, leaderReleaseSQL, name, leader); err != nil {
		return fmt.Errorf("release the leader's presence: %w", err)
	}
	return nil
}

// idle waits on conn for one watchSlice, returning early with an error
// when the connection fails: a read of the socket sees it at once.
func idle(ctx context.Context, conn *pgx.Conn) error {
	wctx, cancel := context.WithTimeout(ctx, watchSlice)
	defer cancel()
	err := conn.PgConn().WaitForNotification(wctx)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return nil // the slice ended
	}
	if err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	return nil
}
