package sqlite

import (
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store/storetest"
)

// TestFlowStatePruned: see storetest.FlowStatePruned.
func TestFlowStatePruned(t *testing.T) {
	clk := clock.NewFake(time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC))
	s := openTemp(t, clk)
	storetest.FlowStatePruned(t, s, clk, func() int {
		var n int
		if err := s.r.QueryRowContext(t.Context(), "SELECT count(*) FROM jobd_queue_partitions").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}
