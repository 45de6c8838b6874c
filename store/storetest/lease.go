package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var leaseTests = []test{
	{"HeartbeatExtends", testHeartbeatExtends},
	{"HeartbeatReportsCancel", testHeartbeatCancel},
	{"ProgressAndCheckpointReportCancel", testProgressCheckpointCancel},
	{"HeartbeatMany", testHeartbeatMany},
	{"ProgressExtends", testProgressExtends},
	{"CheckpointExtends", testCheckpointExtends},
	{"UpdatedAt", testLeaseUpdatedAt},
}

func (e *env) heartbeat(t *testing.T, leases ...store.Lease) []store.HeartbeatResult {
	t.Helper()
	res, err := e.s.JobHeartbeat(t.Context(), owner, leases)
	if err != nil {
		t.Fatalf("JobHeartbeat: %v", err)
	}
	if len(res) != len(leases) {
		t.Fatalf("JobHeartbeat: %d results for %d leases", len(res), len(leases))
	}
	return res
}

// wantExtended checks that write, made 50s into a 60s lease, pushed its expiry
// to now + 60s, so that the reaper leaves the job alone after the original
// expiry and takes it after the new one.
func wantExtended(t *testing.T, e *env, write func(c *job.Job)) {
	t.Helper()
	e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(50 * time.Second)
	write(c)
	wantTimePtr(t, "lease_expires_at after the write", e.get(t, c.ID).LeaseExpiresAt, e.now().Add(time.Minute))

	e.clk.Advance(20 * time.Second) // past the original expiry
	if n := e.rescue(t, 10); n != 0 {
		t.Fatalf("rescue took %d jobs whose lease was extended", n)
	}
	j := e.get(t, c.ID)
	if j.State != job.StateRunning || j.LeaseToken != c.LeaseToken {
		t.Fatalf("after rescue: state %q token %s, want running with %s", j.State, j.LeaseToken, c.LeaseToken)
	}
	e.clk.Advance(41 * time.Second) // past the extended expiry
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d after the extended lease expired, want 1", n)
	}
}

func testHeartbeatExtends(t *testing.T, e *env) {
	wantExtended(t, e, func(c *job.Job) {
		if res := e.heartbeat(t, leaseOf(c)); !res[0].Held || res[0].CancelRequested {
			t.Fatalf("heartbeat: %+v, want held, no cancel", res[0])
		}
	})
}

func testProgressExtends(t *testing.T, e *env) {
	wantExtended(t, e, func(c *job.Job) {
		if _, err := e.s.JobSetProgress(t.Context(), leaseOf(c), job.Progress{Done: 1, Total: 2}); err != nil {
			t.Fatalf("JobSetProgress: %v", err)
		}
	})
}

func testCheckpointExtends(t *testing.T, e *env) {
	wantExtended(t, e, func(c *job.Job) {
		if _, err := e.s.JobSetCheckpoint(t.Context(), leaseOf(c), json.RawMessage(`{"page": 1}`)); err != nil {
			t.Fatalf("JobSetCheckpoint: %v", err)
		}
	})
}

func testHeartbeatCancel(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	if res := e.heartbeat(t, leaseOf(c)); !res[0].Held || res[0].CancelRequested {
		t.Fatalf("heartbeat before cancel: %+v, want held, no cancel", res[0])
	}
	e.cancel(t, c.ID)
	if res := e.heartbeat(t, leaseOf(c)); !res[0].Held || !res[0].CancelRequested {
		t.Fatalf("heartbeat after cancel: %+v, want held with cancel requested", res[0])
	}
}

// testProgressCheckpointCancel: progress and a checkpoint report whether
// the job's cancel was requested, as a heartbeat does, and still write.
func testProgressCheckpointCancel(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	for _, requested := range []bool{false, true} {
		if requested {
			e.cancel(t, c.ID)
		}
		cancel, err := e.s.JobSetProgress(t.Context(), leaseOf(c), job.Progress{Done: 1, Total: 2})
		if err != nil || cancel != requested {
			t.Fatalf("progress (cancel requested %v): %v, %v", requested, cancel, err)
		}
		cancel, err = e.s.JobSetCheckpoint(t.Context(), leaseOf(c), json.RawMessage(`{"page": 3}`))
		if err != nil || cancel != requested {
			t.Fatalf("checkpoint (cancel requested %v): %v, %v", requested, cancel, err)
		}
	}
	wantJSON(t, "checkpoint", e.get(t, c.ID).Checkpoint, []byte(`{"page": 3}`))
}

func testHeartbeatMany(t *testing.T, e *env) {
	e.insertN(t, 2, job.InsertParams{Kind: "k"})
	got := e.claim(t, job.DefaultQueue, 2)
	if len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	e.cancel(t, got[1].ID)
	res := e.heartbeat(t,
		leaseOf(got[0]),
		store.Lease{ID: uuid.Must(uuid.NewV7()), Token: uuid.New()}, // unknown job
		leaseOf(got[1]),
		store.Lease{ID: got[0].ID, Token: uuid.New()}) // wrong token
	want := []store.HeartbeatResult{{Held: true}, {}, {Held: true, CancelRequested: true}, {}}
	for i := range want {
		if res[i].Held != want[i].Held || (want[i].Held && res[i].CancelRequested != want[i].CancelRequested) {
			t.Fatalf("heartbeat results %+v, want %+v (in the leases' order)", res, want)
		}
	}
}

// testLeaseUpdatedAt: a heartbeat moves heartbeat_at and the lease expiry
// but not updated_at, so the "updated since" feed does not report every
// running job at every beat; progress and a checkpoint move it.
func testLeaseUpdatedAt(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(10 * time.Second)
	if res := e.heartbeat(t, leaseOf(c)); !res[0].Held {
		t.Fatalf("heartbeat: %+v, want held", res[0])
	}
	j := e.get(t, c.ID)
	wantTime(t, "updated_at after a heartbeat", j.UpdatedAt, c.UpdatedAt)
	wantTimePtr(t, "heartbeat_at", j.HeartbeatAt, e.now())
	wantTimePtr(t, "lease_expires_at", j.LeaseExpiresAt, e.now().Add(time.Minute))
	since := e.now()
	e.wantList(t, "feed after a heartbeat", store.ListParams{UpdatedSince: &since})

	for _, write := range []struct {
		what string
		fn   func() error
	}{
		{"progress", func() error {
			_, err := e.s.JobSetProgress(t.Context(), leaseOf(c), job.Progress{Done: 1, Total: 2})
			return err
		}},
		{"checkpoint", func() error {
			_, err := e.s.JobSetCheckpoint(t.Context(), leaseOf(c), json.RawMessage(`{"page": 2}`))
			return err
		}},
	} {
		e.clk.Advance(time.Second)
		since := e.now()
		if err := write.fn(); err != nil {
			t.Fatalf("%s: %v", write.what, err)
		}
		wantStamp(t, "updated_at after "+write.what, e.get(t, c.ID).UpdatedAt, since)
		e.wantList(t, "feed after "+write.what, store.ListParams{UpdatedSince: &since}, c)
	}
}
