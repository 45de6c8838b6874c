package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
)

var progressTests = []test{
	{"StoredAndRead", testProgressStored},
	{"CheckpointAcrossRetry", testCheckpointAcrossRetry},
	{"CheckpointAcrossRescue", testCheckpointAcrossRescue},
}

func testProgressStored(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	for _, p := range []job.Progress{
		{Phase: "download", Done: 3, Total: 10, Items: json.RawMessage(`{"a.csv": "done", "b.csv": {"rows": 4}}`)},
		{Phase: "parse", Done: 10, Total: 10}, // a later report replaces the whole progress
	} {
		canceled, err := e.s.JobSetProgress(t.Context(), leaseOf(c), p)
		if err != nil {
			t.Fatalf("JobSetProgress: %v", err)
		}
		if canceled {
			t.Fatalf("JobSetProgress reports cancel requested; nobody asked")
		}
		got := e.get(t, c.ID).Progress
		if got.Phase != p.Phase || got.Done != p.Done || got.Total != p.Total || !jsonEqual(got.Items, p.Items) {
			t.Fatalf("progress = %+v (items %s), want %+v (items %s)", got, got.Items, p, p.Items)
		}
	}
}

// claimWithCheckpoint claims the only job and stores checkpoint for it.
func claimWithCheckpoint(t *testing.T, e *env, checkpoint string) *job.Job {
	t.Helper()
	c := e.claimOne(t, job.DefaultQueue)
	if _, err := e.s.JobSetCheckpoint(t.Context(), leaseOf(c), json.RawMessage(checkpoint)); err != nil {
		t.Fatalf("JobSetCheckpoint: %v", err)
	}
	wantJSON(t, "checkpoint", e.get(t, c.ID).Checkpoint, []byte(checkpoint))
	return c
}

func testCheckpointAcrossRetry(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	e.fail(t, claimWithCheckpoint(t, e, `{"page": 7}`), true, 0)
	c := e.claimOne(t, job.DefaultQueue)
	if c.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", c.Attempt)
	}
	// The handler reads the checkpoint from the claimed job.
	wantJSON(t, "checkpoint of the reclaimed job", c.Checkpoint, []byte(`{"page": 7}`))
}

func testCheckpointAcrossRescue(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
	claimWithCheckpoint(t, e, `{"page": 3, "cursor": "abc"}`)
	e.clk.Advance(2 * time.Minute)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	c := e.claimOne(t, job.DefaultQueue)
	if c.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", c.Attempt)
	}
	// The handler reads the checkpoint from the claimed job.
	wantJSON(t, "checkpoint of the reclaimed job", c.Checkpoint, []byte(`{"page": 3, "cursor": "abc"}`))
}
