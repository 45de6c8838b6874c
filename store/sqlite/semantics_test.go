package sqlite

import (
	"encoding/json"
	"testing"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestEmptyKeysStoredNull: empty lock, partition and idempotency keys are
// NULL in the table (so the unique indexes ignore them) and read back "".
func TestEmptyKeysStoredNull(t *testing.T) {
	s := openTemp(t, nil)
	res, err := s.JobInsertMany(t.Context(), []job.InsertParams{{Kind: "k"}, {Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Created || !res[1].Created {
		t.Fatal("two jobs without keys: want both created")
	}
	var n int
	err = s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM jobd_jobs
		WHERE lock_key IS NULL AND partition_key IS NULL AND idempotency_key IS NULL AND args_hash IS NULL`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d rows with NULL keys, want 2", n)
	}
	j := res[0].Job
	if j.LockKey != "" || j.PartitionKey != "" || j.IdempotencyKey != "" || j.ArgsHash != "" {
		t.Fatalf("keys read back as %q %q %q %q, want empty", j.LockKey, j.PartitionKey, j.IdempotencyKey, j.ArgsHash)
	}
}

// TestResultKeptVerbatim: a result comes back byte for byte, through the
// batch of successes and through a single outcome.
func TestResultKeptVerbatim(t *testing.T) {
	s := openTemp(t, nil)
	ctx := t.Context()
	if _, err := s.JobInsertMany(ctx, []job.InsertParams{{Kind: "a"}, {Kind: "b"}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := s.JobClaim(ctx, store.ClaimParams{Queue: job.DefaultQueue, Max: 2, Owner: "w"})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("JobClaim: %d jobs, %v", len(jobs), err)
	}
	result := json.RawMessage(`{"b": 1.0,  "a": ["\u00e9", 12345678901234567890]}`)
	batch := []store.Outcome{{Lease: store.Lease{ID: jobs[0].ID, Token: jobs[0].LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: result}}}
	mixed := []store.Outcome{
		{Lease: store.Lease{ID: jobs[1].ID, Token: jobs[1].LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: result}},
		{Lease: store.Lease{ID: jobs[0].ID, Token: jobs[0].LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeCanceled}}, // lost: forces the per-outcome path
	}
	for _, outcomes := range [][]store.Outcome{batch, mixed} {
		res, err := s.JobFinish(ctx, outcomes)
		if err != nil || res[0].Lost {
			t.Fatalf("JobFinish: %+v, %v", res, err)
		}
		got, err := s.JobGet(ctx, outcomes[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Result) != string(result) {
			t.Fatalf("result %s, want %s", got.Result, result)
		}
	}
}
