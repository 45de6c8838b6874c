package storetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// PreWorkflowJob is a job as a driver writes it, by hand, in the schema
// before the workflows' migration (postgres 014, sqlite 013), for
// CheckMigratedToWorkflows.
type PreWorkflowJob struct {
	ID    uuid.UUID
	Queue string
	State job.State
	// LockKey, IdempotencyKey and ArgsHash exercise the partial unique
	// indexes the migration keeps ("" for none).
	LockKey, IdempotencyKey, ArgsHash string
	// Token is a running job's lease token.
	Token   uuid.UUID
	At      time.Time // created, updated, run_at; finished for a final job
	Journal string    // a stored journal ("" for none)
}

// PreWorkflowJobs returns the jobs a migration test writes before it
// migrates, at start: one in each state, with keys and a journal.
func PreWorkflowJobs(start time.Time) []PreWorkflowJob {
	id := func(i int) uuid.UUID {
		u := uuid.Must(uuid.NewV7())
		u[15] = byte(i)
		return u
	}
	journal := `[{"kind":"failed","at":` + strconv.FormatInt(start.UnixMicro(), 10) + `,"attempt":1,"detail":"boom"}]`
	return []PreWorkflowJob{
		{ID: id(1), Queue: "q", State: job.StateQueued, IdempotencyKey: "key-1", At: start},
		{ID: id(2), Queue: "q", State: job.StateQueued, ArgsHash: "hash-2", At: start.Add(time.Second)},
		{ID: id(3), Queue: "r", State: job.StateRunning, LockKey: "lock-3", Token: uuid.New(), At: start},
		{ID: id(4), Queue: "q", State: job.StateSucceeded, At: start},
		{ID: id(5), Queue: "q", State: job.StateFailed, At: start, Journal: journal},
		{ID: id(6), Queue: "q", State: job.StateCanceled, At: start},
	}
}

// CheckMigratedToWorkflows checks the jobs of PreWorkflowJobs after the
// workflows' migration: each reads as it was written, outside any
// workflow; the unique indexes still hold (the idempotency key and the
// args hash still name their jobs, the running job still holds its
// lock); the jobs move on (the queued ones are claimed and finished, the
// failed one retried); and a workflow can be submitted and run.
func CheckMigratedToWorkflows(t *testing.T, s store.Store, clk *clock.Fake, jobs []PreWorkflowJob) {
	t.Helper()
	ctx := t.Context()
	for _, pj := range jobs {
		j, err := s.JobGet(ctx, pj.ID)
		if err != nil {
			t.Fatalf("JobGet %s after the migration: %v", pj.ID, err)
		}
		if j.State != pj.State || j.Queue != pj.Queue || j.LockKey != pj.LockKey || j.IdempotencyKey != pj.IdempotencyKey ||
			j.ArgsHash != pj.ArgsHash || j.WorkflowID != uuid.Nil || j.Ref != "" || j.RunOn != "" || j.WaitFor != "" ||
			!j.CreatedAt.Equal(pj.At) {
			t.Fatalf("job %s after the migration: %+v, want it as written: %+v", pj.ID, j, pj)
		}
		if pj.State == job.StateRunning && j.LeaseToken != pj.Token {
			t.Fatalf("running job %s: token %s, want %s", pj.ID, j.LeaseToken, pj.Token)
		}
	}
	if evs, err := s.JobEvents(ctx, jobs[4].ID); err != nil || len(evs) != 2 || evs[1].Kind != job.EventFailed || evs[1].Detail != "boom" {
		t.Fatalf("journal of the failed job: %+v %v", evs, err)
	}
	// The idempotency key's index: the same key returns the job.
	res, err := s.JobInsertMany(ctx, []job.InsertParams{{Queue: "q", Kind: "k", IdempotencyKey: "key-1"}})
	if err != nil || res[0].Created || res[0].Job.ID != jobs[0].ID {
		t.Fatalf("insert with the key of a migrated job: %+v %v, want that job", res, err)
	}
	// The lock index: a job of the running job's lock key waits.
	if _, err := s.JobInsertMany(ctx, []job.InsertParams{{Queue: "r", Kind: "k", LockKey: "lock-3"}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.JobClaim(ctx, store.ClaimParams{Queue: "r", Max: 10, Owner: owner}); err != nil || len(got) != 0 {
		t.Fatalf("claim behind a migrated running job's lock: %d jobs, %v; want none", len(got), err)
	}
	got, err := s.JobClaim(ctx, store.ClaimParams{Queue: "q", Max: 10, Owner: owner})
	if err != nil || len(got) != 2 {
		t.Fatalf("claim of the migrated queued jobs: %d, %v", len(got), err)
	}
	for _, j := range got {
		if r, err := s.JobFinish(ctx, []store.Outcome{{Lease: store.LeaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded}}}); err != nil || r[0].Lost {
			t.Fatalf("finish %s: %+v %v", j.ID, r, err)
		}
	}
	if j, err := s.JobRetry(ctx, jobs[4].ID); err != nil || j.State != job.StateQueued {
		t.Fatalf("retry of the migrated failed job: %+v %v", j, err)
	}
	clk.Advance(time.Second)
	w, err := s.WorkflowSubmit(ctx, store.WorkflowSubmitParams{WorkflowParams: job.WorkflowParams{Name: "after",
		Tasks: []job.TaskParams{wtask("w", "a"), wtask("w", "b", "a")}}})
	if err != nil || !w.Created || w.Tasks[1].State != job.StateWaiting {
		t.Fatalf("a workflow after the migration: %+v %v", w, err)
	}
}
