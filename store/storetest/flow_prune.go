package storetest

import (
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/store"
)

// FlowStatePruned checks that JobPrune deletes the partitions' flow state
// (rate state, throttles) once it has passed, and keeps what is still in
// force. s is a fresh store on clk; rows counts the store's rows of
// partition state, which no Store method shows. A driver calls it from a
// test of its own.
func FlowStatePruned(t *testing.T, s store.Store, clk *clock.Fake, rows func() int) {
	t.Helper()
	e := &env{s: s, clk: clk}
	const q = "pruned"
	e.setLimits(t, q, flow.Limits{ThrottleBy: byPartition, Rate: &flow.Rate{Limit: 1, Period: time.Second, By: byPartition}})
	for _, key := range []string{"a", "b", "c"} {
		e.inPartition(t, q, key, 2)
	}
	got := e.claim(t, q, 10)
	if len(got) != 3 {
		t.Fatalf("claimed %d, want one of each partition", len(got))
	}
	e.throttle(t, got[0], time.Minute) // a
	if n := rows(); n != 3 {
		t.Fatalf("%d rows of partition state, want 3", n)
	}
	prune := func() {
		t.Helper()
		if _, err := e.s.JobPrune(t.Context(), e.now().Add(-time.Hour), 100); err != nil {
			t.Fatalf("JobPrune: %v", err)
		}
	}
	prune()
	if n := rows(); n != 3 {
		t.Fatalf("%d rows of partition state after a prune, want 3: all still in force", n)
	}
	e.clk.Advance(2 * time.Second)
	prune()
	if n := rows(); n != 1 {
		t.Fatalf("%d rows of partition state once the rates' state passed, want 1 (a's throttle)", n)
	}
	e.clk.Advance(time.Minute)
	prune()
	if n := rows(); n != 0 {
		t.Fatalf("%d rows of partition state once everything passed, want none", n)
	}
	if n := len(e.claim(t, q, 10)); n != 3 {
		t.Fatalf("claimed %d once everything passed, want 3", n)
	}
}
