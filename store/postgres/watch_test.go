package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
)

// watchEvents are what one LeaderWatch reported.
type watchEvents struct {
	present chan bool
	vacated chan struct{}
	done    chan error
}

// watch runs s.LeaderWatch of node in election name until t ends.
func watch(t *testing.T, s *Store, name, node string) *watchEvents {
	t.Helper()
	ev := &watchEvents{present: make(chan bool, 16), vacated: make(chan struct{}, 16), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		ev.done <- s.LeaderWatch(ctx, name, node, 30*time.Second,
			func(p bool) { ev.present <- p },
			func() { ev.vacated <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-ev.done; err != nil {
			t.Errorf("LeaderWatch of %s: %v", node, err)
		}
	})
	return ev
}

func (ev *watchEvents) wantPresent(t *testing.T, want bool, who string) {
	t.Helper()
	select {
	case got := <-ev.present:
		if got != want {
			t.Fatalf("%s: present(%t), want present(%t)", who, got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no present(%t) within 30s", who, want)
	}
}

// TestLeaderWatchTakesOver: node n1 leads, and both n1 and n2 watch the
// election; when n1's watching connection dies (the server ends it, as
// it does the session of a process that was SIGKILLed), n1 hears that
// its presence is lost and n2, waiting for n1's presence lock, takes
// the term over at once (not when it runs out, 30 s on) and is told to
// attempt. Once n1's watch is back, it watches n2 in turn, and n2's
// resignation tells it to attempt.
func TestLeaderWatchTakesOver(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	s1, s2 := openStore(t, url, clock.Real), openStore(t, url, clock.Real)
	ctx := t.Context()
	if leads, err := s1.LeaderAttempt(ctx, "e", "n1", 30*time.Second); err != nil || !leads {
		t.Fatalf("n1's attempt: %t, %v", leads, err)
	}
	w1 := watch(t, s1, "e", "n1")
	w1.wantPresent(t, true, "n1")
	w2 := watch(t, s2, "e", "n2")
	w2.wantPresent(t, true, "n2")
	conn := connect(t, url)
	// n2 waits for n1's presence: its session waits for a lock.
	waitLockWaits(t, conn, 1)
	var killed int
	err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND (l.classid, l.objid) = (hashtext('jobd_leaders:e')::oid, hashtext('n1')::oid)`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d sessions holding n1's presence (%v), want 1", killed, err)
	}
	w1.wantPresent(t, false, "n1")
	select {
	case <-w2.vacated:
	case <-time.After(30 * time.Second):
		t.Fatal("n2 was not told that the term is free")
	}
	var node string
	var left time.Duration
	if err := conn.QueryRow(ctx, "SELECT node, expires_at - now() FROM jobd_leaders WHERE name = 'e'").Scan(&node, &left); err != nil {
		t.Fatal(err)
	}
	if node != "n2" || left < 20*time.Second {
		t.Fatalf("term of %s for %s more, want n2's, renewed for about 30s", node, left)
	}
	if leads, err := s2.LeaderAttempt(ctx, "e", "n2", 30*time.Second); err != nil || !leads {
		t.Fatalf("n2's attempt after the take-over: %t, %v", leads, err)
	}
	// n1 comes back, and waits for n2's presence in turn; n2 resigns (a
	// node that stops), and n1 is told to attempt.
	w1.wantPresent(t, true, "n1")
	waitLockWaits(t, conn, 1)
	if err := s2.LeaderResign(ctx, "e", "n2"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w1.vacated:
	case <-time.After(30 * time.Second):
		t.Fatal("n1 was not told that n2 resigned")
	}
}

// TestLeaderWatchWithoutDirect: through a transaction pooler without a
// listen URL there is no connection to hold a presence on: LeaderWatch
// says so at once, and the term alone elects.
func TestLeaderWatchWithoutDirect(t *testing.T) {
	t.Parallel()
	s := openStore(t, migratedDatabase(t), clock.Real)
	s.direct = nil // what Open leaves for a pooled URL without ListenURL
	err := s.LeaderWatch(t.Context(), "e", "n", time.Minute, func(bool) {}, func() {})
	if err == nil || !strings.Contains(err.Error(), "no dedicated connection") {
		t.Fatalf("LeaderWatch without a direct connection: %v", err)
	}
}

// waitLockWaits waits (at most 30 s) until n sessions of the database
// wait for an advisory lock.
func waitLockWaits(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions wait for an advisory lock, want %d", waiting, n)
		}
		time.Sleep(5 * time.Millisecond) // a poll bounded by the deadline
	}
}
