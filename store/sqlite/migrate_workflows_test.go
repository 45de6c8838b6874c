package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store/storetest"
)

// TestMigrateWorkflows writes jobs in every state in the schema of
// migration 012, migrates (013_workflows, which rebuilds jobd_jobs), and
// requires every row, every index of the table and the database's
// integrity to come through, the new CHECKs to hold, and the jobs to move
// on (storetest.CheckMigratedToWorkflows).
func TestMigrateWorkflows(t *testing.T) {
	ctx := t.Context()
	start := time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)
	clk := clock.NewFake(start.Add(time.Hour))
	s, err := Open(ctx, filepath.Join(t.TempDir(), "jobd.db"), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.migrateTo(ctx, 12); err != nil {
		t.Fatalf("migrate to 012: %v", err)
	}
	jobs := storetest.PreWorkflowJobs(start)
	for _, j := range jobs {
		var token, lease, finished any
		if j.State == job.StateRunning {
			token, lease = j.Token.String(), j.At.Add(time.Hour).UnixMicro()
		}
		if j.State.Final() {
			finished = j.At.UnixMicro()
		}
		_, err := s.w.ExecContext(ctx, `INSERT INTO jobd_jobs (id, queue, kind, args, state, priority, run_at,
			attempt, max_attempts, lease_ttl_us, lease_token, lease_owner, lease_expires_at, lock_key,
			idempotency_key, args_hash, created_at, finished_at, updated_at, journal)
			VALUES (?1, ?2, 'k', '{}', ?3, 100, ?4, 1, 3, 60000000, ?5, 'n', ?6, nullif(?7, ''), nullif(?8, ''),
			nullif(?9, ''), ?4, ?10, ?4, nullif(?11, ''))`,
			j.ID.String(), j.Queue, string(j.State), j.At.UnixMicro(), token, lease, j.LockKey, j.IdempotencyKey,
			j.ArgsHash, finished, j.Journal)
		if err != nil {
			t.Fatalf("job %s: %v", j.ID, err)
		}
	}
	// The outcome remembered (012_accepted_outcome) comes through the
	// rebuild too.
	if _, err := s.w.ExecContext(ctx, `UPDATE jobd_jobs SET outcome_token = id, outcome = state, outcome_owner = 'n'
		WHERE state IN ('succeeded', 'failed', 'canceled')`); err != nil {
		t.Fatal(err)
	}
	// Statistics of the old table: the migration must not leave them
	// pointing at a table that is gone.
	if _, err := s.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	const rowsQuery = `SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
		lease_token, lease_owner, lease_expires_at, lock_key, idempotency_key, args_hash, created_at,
		finished_at, updated_at, journal, outcome_token, outcome, outcome_owner FROM jobd_jobs ORDER BY id`
	before, indexesBefore := dumpRows(t, s.r, rowsQuery), indexes(t, s.r)

	// To the latest: 014_durable rebuilds jobd_jobs again, which must
	// keep every row and index as well.
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if after := dumpRows(t, s.r, rowsQuery); !slices.Equal(before, after) {
		t.Fatalf("rows after the migration:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	want := append(slices.Clone(indexesBefore),
		"jobd_jobs_workflow_idx: CREATE INDEX jobd_jobs_workflow_idx ON jobd_jobs (workflow_id, id)\n    WHERE workflow_id IS NOT NULL",
		"jobd_jobs_children_idx: CREATE UNIQUE INDEX jobd_jobs_children_idx ON jobd_jobs (parent_id, child_key)\n    WHERE parent_id IS NOT NULL")
	slices.Sort(want)
	if got := indexes(t, s.r); !slices.Equal(got, want) {
		t.Fatalf("indexes of jobd_jobs after the migration:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := dumpRows(t, s.r, "PRAGMA integrity_check"); len(got) != 1 || got[0] != "ok" {
		t.Fatalf("integrity_check: %v", got)
	}
	if got := dumpRows(t, s.r, "PRAGMA foreign_key_check"); len(got) != 0 {
		t.Fatalf("foreign_key_check: %v", got)
	}
	if got := dumpRows(t, s.r, "SELECT name FROM sqlite_schema WHERE name LIKE 'jobd_jobs_new%' UNION ALL SELECT tbl FROM sqlite_stat1 WHERE tbl LIKE 'jobd_jobs_new%'"); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
	// The new CHECKs hold: no unknown state, waiting exactly with wait_for,
	// run_on exactly in a workflow.
	for _, bad := range []string{
		"UPDATE jobd_jobs SET state = 'sleeping' WHERE id = ?",
		"UPDATE jobd_jobs SET state = 'waiting' WHERE id = ?",
		"UPDATE jobd_jobs SET wait_for = 'dependencies' WHERE id = ?",
		"UPDATE jobd_jobs SET run_on = 'success' WHERE id = ?",
	} {
		if _, err := s.w.ExecContext(ctx, bad, jobs[0].ID.String()); err == nil || !strings.Contains(err.Error(), "CHECK") {
			t.Fatalf("%s: %v, want a CHECK constraint failure", bad, err)
		}
	}
	storetest.CheckMigratedToWorkflows(t, s, clk, jobs)
}

// dumpRows renders the rows query returns, one string each.
func dumpRows(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				parts[i] = "NULL"
			case []byte:
				parts[i] = string(x)
			default:
				parts[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// indexes lists the indexes of jobd_jobs, sorted, with their SQL (none
// for the primary key's).
func indexes(t *testing.T, db *sql.DB) []string {
	t.Helper()
	got := dumpRows(t, db, `SELECT name || ': ' || coalesce(sql, '(primary key)') FROM sqlite_schema
		WHERE type = 'index' AND tbl_name = 'jobd_jobs' ORDER BY name`)
	slices.Sort(got)
	return got
}
