package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
)

// TestRestart: jobd stops (store, engine and server closed) with a result
// stored, a request running and one queued, and starts again on the same
// database: nothing is lost. The running call, cut by the shutdown, runs
// again; every result is fetched once.
func TestRestart(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		first := start(t, db, up, options{concurrency: 1})
		stored := first.submit("POST", "/gw/up/echo?status=202", "kept", "store")
		first.waitState(stored, job.StateSucceeded)
		recv(t, up.echoed, "the echo")
		running := first.submit("GET", "/gw/up/slow?n=1", "", "store")
		up.waitStarted(t)
		queued := first.submit("GET", "/gw/up/slow?n=2", "", "store")
		first.stop()
		if got := recv(t, up.aborted, "the shutdown to cut the running call"); got != "1" {
			t.Fatalf("aborted call %q, want 1", got)
		}

		up.unblock()
		second := start(t, db, up, options{concurrency: 1})
		r := second.do("PUT", "/api/v1/async/"+stored.String(), "")
		want(t, "fetch the result stored before the restart", r, http.StatusAccepted)
		if r.header.Get("X-Async-Id") != stored.String() {
			t.Fatalf("fetched %s without its id", r)
		}
		second.waitState(running, job.StateSucceeded)
		second.waitState(queued, job.StateSucceeded)
		for i, id := range []string{running.String(), queued.String()} {
			r := second.do("PUT", "/_api/job/"+id, "")
			want(t, "fetch a request queued before the restart", r, http.StatusOK)
			if want := []string{"slow 1 done", "slow 2 done"}[i]; string(r.body) != want {
				t.Fatalf("fetched %q, want %q", r.body, want)
			}
		}
	})
}

// TestResultTTL: a result nobody fetched is removed once it is older than
// the result TTL.
func TestResultTTL(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		clk := clock.NewFake(time.Now())
		n := start(t, db, up, options{clock: clk, ttl: time.Hour, sweep: 10 * time.Millisecond})
		id := n.submit("GET", "/gw/up/echo", "", "store")
		n.waitState(id, job.StateSucceeded)
		want(t, "GET before the TTL", n.do("GET", "/api/v1/async/"+id.String(), ""), http.StatusOK)

		clk.Advance(time.Hour + time.Minute)
		// The fake clock drives the whole node: after the jump its leader
		// term has lapsed, and the election and the sweep wait on timers
		// of that clock. Keep it moving so that they fire.
		keepMoving(t, clk)
		n.waitGone(id)
		want(t, "GET after the TTL", n.do("GET", "/api/v1/async/"+id.String(), ""), http.StatusNotFound)
	})
}

// keepMoving advances clk by 100 ms every 5 ms until t ends.
func keepMoving(t *testing.T, clk *clock.Fake) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				clk.Advance(100 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
}
