package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// listen runs s.Listen until the test ends and returns the queues it is
// woken for. It returns once the listener is subscribed: it Wakes a probe
// queue until the probe comes back.
func listen(t *testing.T, s *Store) <-chan string {
	t.Helper()
	got := make(chan string, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Listen(ctx, func(n store.Notification) {
			if n.CancelJob != uuid.Nil {
				return
			}
			select {
			case got <- n.Queue:
			default:
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen: %v", err)
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := s.Wake(t.Context(), "probe"); err != nil {
			t.Fatal(err)
		}
		select {
		case q := <-got:
			if q == "probe" {
				for len(got) > 0 {
					<-got
				}
				return got
			}
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("Listen never subscribed")
	return nil
}

// wantWake waits (a few seconds at most) for a wake-up of queue.
func wantWake(t *testing.T, got <-chan string, queue string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case q := <-got:
			if q == queue {
				return
			}
		case <-timeout:
			t.Fatalf("no wake-up for queue %q", queue)
		}
	}
}

// TestSharedWakeups runs two "nodes" on one file: each is woken by the
// other's writes.
func TestSharedWakeups(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewFake(start)
	path := filepath.Join(t.TempDir(), "jobd.db")
	a := openAt(t, path, clk)
	b := openAt(t, path, clk)
	if a.hub != b.hub {
		t.Fatal("two stores on one file have different hubs")
	}
	woken := listen(t, b)

	insert := func(p job.InsertParams) {
		t.Helper()
		if _, err := a.JobInsertMany(t.Context(), []job.InsertParams{p}); err != nil {
			t.Fatal(err)
		}
	}
	insert(job.InsertParams{Queue: "now", Kind: "k"})
	wantWake(t, woken, "now")

	insert(job.InsertParams{Queue: "later", Kind: "k", RunAt: start.Add(time.Minute)})
	clk.Advance(time.Minute)
	wantWake(t, woken, "later")

	if err := a.Wake(t.Context(), "explicit"); err != nil {
		t.Fatal(err)
	}
	wantWake(t, woken, "explicit")

	// A third store on the same path, opened after the others, joins the
	// same hub; closing one store leaves the hub to the others.
	c := openAt(t, filepath.Join(filepath.Dir(path), ".", "jobd.db"), clk)
	if c.hub != b.hub {
		t.Fatal("a store opened later on the same file has another hub")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.JobInsertMany(t.Context(), []job.InsertParams{{Queue: "after-close", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	wantWake(t, woken, "after-close")
}

// TestHubRegistryReleased checks that the last Close of a file drops its
// hub.
func TestHubRegistryReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobd.db")
	for range 2 {
		s, err := Open(t.Context(), path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	hubs.Lock()
	defer hubs.Unlock()
	if _, ok := hubs.m[path]; ok {
		t.Fatalf("hub of %s kept after every store closed", path)
	}
}
