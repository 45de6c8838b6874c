package storetest

import (
	"testing"
	"time"
)

var leaderTests = []test{
	{"Election", testLeaderElection},
	{"Resign", testLeaderResign},
	{"Boundary", testLeaderBoundary},
}

func (e *env) wantLeads(t *testing.T, name, node string, ttl time.Duration, want bool) {
	t.Helper()
	got, err := e.s.LeaderAttempt(t.Context(), name, node, ttl)
	if err != nil {
		t.Fatalf("LeaderAttempt %q %q: %v", name, node, err)
	}
	if got != want {
		t.Fatalf("LeaderAttempt %q by %q at +%s: leads = %v, want %v", name, node, e.now().Sub(start), got, want)
	}
}

func testLeaderElection(t *testing.T, e *env) {
	const ttl = 30 * time.Second
	e.wantLeads(t, "reaper", "a", ttl, true)
	e.wantLeads(t, "reaper", "b", ttl, false)
	e.wantLeads(t, "other-duty", "b", ttl, true) // names are independent

	e.clk.Advance(20 * time.Second)
	e.wantLeads(t, "reaper", "a", ttl, true) // extends a's term to +50s
	e.clk.Advance(20 * time.Second)          // past the first term
	e.wantLeads(t, "reaper", "b", ttl, false)
	e.clk.Advance(15 * time.Second) // past the extended term
	e.wantLeads(t, "reaper", "b", ttl, true)
	e.wantLeads(t, "reaper", "a", ttl, false)
}

func testLeaderResign(t *testing.T, e *env) {
	const ttl = time.Minute
	e.wantLeads(t, "reaper", "a", ttl, true)
	// Resigning a term one does not hold changes nothing.
	if err := e.s.LeaderResign(t.Context(), "reaper", "b"); err != nil {
		t.Fatalf("LeaderResign by a non-leader: %v", err)
	}
	e.wantLeads(t, "reaper", "b", ttl, false)
	if err := e.s.LeaderResign(t.Context(), "reaper", "a"); err != nil {
		t.Fatalf("LeaderResign: %v", err)
	}
	e.wantLeads(t, "reaper", "b", ttl, true)
	e.wantLeads(t, "reaper", "a", ttl, false)
}

// testLeaderBoundary: a term covers the instants before its expiry, and
// has ended at its expiry exactly (expires_at <= now).
func testLeaderBoundary(t *testing.T, e *env) {
	const ttl = 30 * time.Second
	e.wantLeads(t, "reaper", "a", ttl, true)
	e.clk.Advance(ttl - time.Microsecond)
	e.wantLeads(t, "reaper", "b", ttl, false)
	e.clk.Advance(time.Microsecond)
	e.wantLeads(t, "reaper", "b", ttl, true)
	e.wantLeads(t, "reaper", "a", ttl, false)
}
