package postgres

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store/storetest"
)

// TestMigrateJournal writes jobs on every path in the schema of
// migration 004, with the journal rows its statements wrote, migrates
// (005_journal), and requires JobEvents to return exactly the journals
// the old table held; then the migrated jobs move on
// (storetest.CheckMigratedJournals).
func TestMigrateJournal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	start := time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)
	clk := clock.NewFake(start.Add(time.Hour))
	s, err := Open(ctx, pgtest.NewDatabase(t), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.migrateTo(ctx, 4); err != nil {
		t.Fatalf("migrate to 004: %v", err)
	}

	jobs := storetest.LegacyJobs(start)
	for i := range jobs {
		j := &jobs[i]
		r := j.Row()
		var token *[16]byte
		if j.State == job.StateRunning {
			token = (*[16]byte)(&j.Token)
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO jobd_jobs (id, queue, kind, args, state, priority, run_at,
			attempt, max_attempts, lease_ttl, lease_token, lease_owner, lease_expires_at, cancel_requested,
			created_at, started_at, finished_at, updated_at)
			VALUES ($1, $2, 'k', '{}', $3, 100, $4, $5, 3, '60s', $6, $7, $8, $9, $4, $10, $11, $12)`,
			pgUUID(j.ID), j.Name, string(j.State), r.CreatedAt, j.Attempt, token, r.LeaseOwner, r.LeaseExpiresAt,
			j.CancelRequested, r.StartedAt, r.FinishedAt, r.UpdatedAt)
		if err != nil {
			t.Fatalf("job %s: %v", j.Name, err)
		}
	}
	// A detail was NULL when empty, but for a claim's: the owner as given.
	for _, e := range storetest.LegacyEvents(jobs) {
		var detail *string
		if e.Event.Detail != "" || e.Event.Kind == job.EventClaimed {
			detail = &e.Event.Detail
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO jobd_job_events (job_id, at, kind, attempt, detail)
			VALUES ($1, $2, $3, $4, $5)`, pgUUID(e.Job.ID), e.Event.At, string(e.Event.Kind), e.Event.Attempt, detail)
		if err != nil {
			t.Fatal(err)
		}
	}
	before := make(map[string][]job.Event)
	for _, j := range jobs {
		before[j.Name] = legacyJournal(t, s, j.ID)
	}

	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	var tables int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'jobd_job_events'").Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("jobd_job_events: %d tables (%v), want it dropped", tables, err)
	}
	storetest.CheckMigratedJournals(t, s, clk, jobs, before)
}

// legacyJournal reads a job's journal as JobEvents did before the
// journal moved into the row.
func legacyJournal(t *testing.T, s *Store, id uuid.UUID) []job.Event {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), `SELECT id, job_id, at, kind, attempt, coalesce(detail, '')
		FROM jobd_job_events WHERE job_id = $1 ORDER BY id`, pgUUID(id))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var evs []job.Event
	for rows.Next() {
		var e job.Event
		var kind string
		if err := rows.Scan(&e.ID, uuidDest(&e.JobID), &e.At, &kind, &e.Attempt, &e.Detail); err != nil {
			t.Fatal(err)
		}
		e.Kind = job.EventKind(kind)
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}
