package postgres

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store/storetest"
)

// TestMigrateWorkflows writes jobs in every state in the schema of
// migration 013, migrates (014_workflows), and requires every row and
// every index of jobd_jobs to come through, the new CHECKs to hold, and
// the jobs to move on (storetest.CheckMigratedToWorkflows).
func TestMigrateWorkflows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	start := time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)
	clk := clock.NewFake(start.Add(time.Hour))
	s, err := Open(ctx, pgtest.NewDatabase(t), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.migrateTo(ctx, 13); err != nil {
		t.Fatalf("migrate to 013: %v", err)
	}
	jobs := storetest.PreWorkflowJobs(start)
	for _, j := range jobs {
		var (
			token    *[16]byte
			lease    *time.Time
			finished *time.Time
		)
		if j.State == job.StateRunning {
			tok, exp := pgUUID(j.Token), j.At.Add(time.Hour)
			token, lease = &tok, &exp
		}
		if j.State.Final() {
			finished = &j.At
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO jobd_jobs (id, queue, kind, args, state, priority, run_at,
			attempt, max_attempts, lease_ttl, lease_token, lease_owner, lease_expires_at, lock_key,
			idempotency_key, args_hash, created_at, finished_at, updated_at, journal)
			VALUES ($1, $2, 'k', '{}', $3, 100, $4, 1, 3, '60s', $5, 'n', $6, nullif($7, ''), nullif($8, ''),
			nullif($9, ''), $4, $10, $4, nullif($11, '')::jsonb)`,
			pgUUID(j.ID), j.Queue, string(j.State), j.At, token, lease, j.LockKey, j.IdempotencyKey,
			j.ArgsHash, finished, j.Journal)
		if err != nil {
			t.Fatalf("job %s: %v", j.ID, err)
		}
	}
	const rowsQuery = `SELECT j::text FROM (SELECT id, queue, kind, args, state, priority, run_at, attempt,
		max_attempts, lease_ttl, lease_token, lease_owner, lease_expires_at, lock_key, idempotency_key,
		args_hash, created_at, finished_at, updated_at, journal FROM jobd_jobs ORDER BY id) j`
	const indexQuery = `SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE tablename = 'jobd_jobs' ORDER BY 1`
	before, indexesBefore := textRows(t, s, rowsQuery), textRows(t, s, indexQuery)

	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if after := textRows(t, s, rowsQuery); !slices.Equal(before, after) {
		t.Fatalf("rows after the migration:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	want := append(slices.Clone(indexesBefore), "jobd_jobs_workflow: CREATE INDEX jobd_jobs_workflow ON public.jobd_jobs "+
		"USING btree (workflow_id, id) WHERE (workflow_id IS NOT NULL)",
		"jobd_jobs_children: CREATE UNIQUE INDEX jobd_jobs_children ON public.jobd_jobs "+
			"USING btree (parent_id, child_key) WHERE (parent_id IS NOT NULL)")
	slices.Sort(want)
	if got := textRows(t, s, indexQuery); !slices.Equal(got, want) {
		t.Fatalf("indexes of jobd_jobs after the migration:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []string{
		"UPDATE jobd_jobs SET state = 'sleeping' WHERE id = $1",
		"UPDATE jobd_jobs SET state = 'waiting' WHERE id = $1",
		"UPDATE jobd_jobs SET wait_for = 'dependencies' WHERE id = $1",
		"UPDATE jobd_jobs SET run_on = 'success' WHERE id = $1",
	} {
		if _, err := s.pool.Exec(ctx, bad, pgUUID(jobs[0].ID)); err == nil || !strings.Contains(err.Error(), "check constraint") {
			t.Fatalf("%s: %v, want a check constraint violation", bad, err)
		}
	}
	storetest.CheckMigratedToWorkflows(t, s, clk, jobs)
}

// textRows returns the one text column of query's rows.
func textRows(t *testing.T, s *Store, query string) []string {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
