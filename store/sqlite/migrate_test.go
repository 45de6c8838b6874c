package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/storetest"
)

func TestMigrateIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobd.db")
	stores := make([]*Store, 3)
	for i := range stores {
		s, err := Open(t.Context(), path, Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	// Several "nodes" migrate one new file at once, then one again.
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			if err := s.Migrate(context.Background()); err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		})
	}
	wg.Wait()
	if err := stores[0].Migrate(t.Context()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}

	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var applied []int
	rows, err := stores[0].r.QueryContext(t.Context(), "SELECT version FROM jobd_schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		applied = append(applied, v)
	}
	var want []int
	for _, m := range ms {
		want = append(want, m.Version)
	}
	if !slices.Equal(applied, want) {
		t.Fatalf("applied versions %v, want each of %v once", applied, want)
	}
}

// TestJobColumns holds scanJob's columns (jobColumns) to the migrated
// table, which has them in that order besides the journal, which only
// JobEvents reads, and the idempotency fingerprint, which only the insert
// reads, and to every statement that returns whole jobs, which lists
// them.
func TestJobColumns(t *testing.T) {
	s := openTemp(t, nil)
	rows, err := s.r.QueryContext(t.Context(), "SELECT name FROM pragma_table_info('jobd_jobs') ORDER BY cid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if !slices.Contains(cols, "journal") {
		t.Fatalf("jobd_jobs columns %v: no journal", cols)
	}
	if !slices.Contains(cols, "idempotency_fingerprint") {
		t.Fatalf("jobd_jobs columns %v: no idempotency_fingerprint", cols)
	}
	notRead := func(c string) bool {
		// The journal, the fingerprint, the outcome remembered and
		// durable execution's columns (014_durable) are read by their
		// own statements.
		return slices.Contains([]string{"journal", "idempotency_fingerprint", "outcome_token", "outcome", "outcome_owner",
			"signal_wait", "durable"}, c)
	}
	if got, want := slices.DeleteFunc(slices.Clone(cols), notRead), append(slices.Clone(jobColumns), taskColumns...); !slices.Equal(got, want) {
		t.Fatalf("jobd_jobs columns but the journal, the fingerprint and the outcome\n%v\nwant what scanJob reads\n%v", got, want)
	}
	list := strings.Join(jobColumns, ", ") + ", " + strings.Join(strings.Fields(taskColumn), " ")
	for name, query := range map[string]string{
		"job_get": jobGetSQL, "job_active_twin": jobActiveTwinSQL, "job_by_idempotency_key": jobByIdempotencyKeySQL,
		"job_list_feed": jobListFeedSQL, "job_list_newest": jobListNewestSQL, "job_list_oldest": jobListOldestSQL,
		"job_insert": jobInsertSQL, "claim_jobs": claimJobsSQL, "job_set_state": jobSetStateSQL,
		"task_insert": taskInsertSQL, "task_set_state": taskSetStateSQL, "workflow_tasks": workflowTasksSQL,
	} {
		if !strings.Contains(strings.Join(strings.Fields(query), " "), list) {
			t.Errorf("%s.sql does not return the columns scanJob reads, in its order:\n%s", name, list)
		}
	}
}

// TestOpenOddPath opens a file whose path holds the characters a "file:"
// URI reserves.
func TestOpenOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%d e")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "jobd.db")
	s := openAt(t, path, nil)
	if err := s.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at %s: %v", path, err)
	}
}

// TestUnfingerprintedKey: a job stored before migration 009 (no
// idempotency fingerprint) matches any request of its key.
func TestUnfingerprintedKey(t *testing.T) {
	s := openTemp(t, nil)
	storetest.CheckUnfingerprinted(t, s, func(t *testing.T, id uuid.UUID) {
		if _, err := s.w.ExecContext(t.Context(), "UPDATE jobd_jobs SET idempotency_fingerprint = NULL WHERE id = ?", id.String()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSchemaVersionBeforeMigrate: a new file is at version 0, and at the
// latest once migrated.
func TestSchemaVersionBeforeMigrate(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "jobd.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ms, _ := migrations()
	latest := store.LatestVersion(ms) // the highest version: numbers may have gaps
	v, err := s.SchemaVersion(t.Context())
	if err != nil || v.Current != 0 || v.Latest != latest {
		t.Fatalf("before Migrate: %+v, %v; want current 0, latest %d", v, err, latest)
	}
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if v, err = s.SchemaVersion(t.Context()); err != nil || !v.UpToDate() || v.Current != latest {
		t.Fatalf("after Migrate: %+v, %v", v, err)
	}
}
