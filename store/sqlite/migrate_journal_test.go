package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store/storetest"
)

// TestMigrateJournal writes jobs on every path in the schema of
// migration 003, with the journal rows jobd wrote, migrates
// (004_journal), and requires JobEvents to return exactly the journals
// the old table held; then the migrated jobs move on
// (storetest.CheckMigratedJournals).
func TestMigrateJournal(t *testing.T) {
	ctx := t.Context()
	start := time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)
	clk := clock.NewFake(start.Add(time.Hour))
	s, err := Open(ctx, filepath.Join(t.TempDir(), "jobd.db"), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.migrateTo(ctx, 3); err != nil {
		t.Fatalf("migrate to 003: %v", err)
	}

	jobs := storetest.LegacyJobs(start)
	micro := func(t *time.Time) *int64 {
		if t == nil {
			return nil
		}
		us := t.UnixMicro()
		return &us
	}
	for i := range jobs {
		j := &jobs[i]
		r := j.Row()
		var token *string
		if j.State == job.StateRunning {
			token = new(j.Token.String())
		}
		_, err := s.w.ExecContext(ctx, `INSERT INTO jobd_jobs (id, queue, kind, args, state, priority, run_at,
			attempt, max_attempts, lease_ttl_us, lease_token, lease_owner, lease_expires_at, cancel_requested,
			created_at, started_at, finished_at, updated_at)
			VALUES (?1, ?2, 'k', '{}', ?3, 100, ?4, ?5, 3, 60000000, ?6, ?7, ?8, ?9, ?4, ?10, ?11, ?12)`,
			j.ID.String(), j.Name, string(j.State), r.CreatedAt.UnixMicro(), j.Attempt, token, r.LeaseOwner,
			micro(r.LeaseExpiresAt), j.CancelRequested, micro(r.StartedAt), micro(r.FinishedAt), r.UpdatedAt.UnixMicro())
		if err != nil {
			t.Fatalf("job %s: %v", j.Name, err)
		}
	}
	for _, e := range storetest.LegacyEvents(jobs) {
		_, err := s.w.ExecContext(ctx, `INSERT INTO jobd_job_events (job_id, at, kind, attempt, detail)
			VALUES (?, ?, ?, ?, ?)`, e.Job.ID.String(), e.Event.At.UnixMicro(), string(e.Event.Kind), e.Event.Attempt, e.Event.Detail)
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
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'jobd_job_events'").Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("jobd_job_events: %d tables (%v), want it dropped", tables, err)
	}
	storetest.CheckMigratedJournals(t, s, clk, jobs, before)
}

// legacyJournal reads a job's journal as JobEvents did before the
// journal moved into the row.
func legacyJournal(t *testing.T, s *Store, id uuid.UUID) []job.Event {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT id, job_id, at, kind, attempt, detail
		FROM jobd_job_events WHERE job_id = ? ORDER BY id`, id.String())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var evs []job.Event
	for rows.Next() {
		var (
			e    job.Event
			at   int64
			kind string
		)
		if err := rows.Scan(&e.ID, &e.JobID, &at, &kind, &e.Attempt, &e.Detail); err != nil {
			t.Fatal(err)
		}
		e.At, e.Kind = fromMicro(at), job.EventKind(kind)
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}
