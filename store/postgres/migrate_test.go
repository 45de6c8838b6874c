package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestMigrationsAreNumbered(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if m.Version != i+1 {
			t.Fatalf("migration %d is %s (version %d), want version %d", i, m.Name, m.Version, i+1)
		}
	}
}

// TestMigrateConcurrentAndIdempotent starts several nodes on one empty
// database at once, then migrates again: each migration is applied once.
func TestMigrateConcurrentAndIdempotent(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	const nodes = 4
	stores := make([]*Store, nodes)
	for i := range stores {
		s, err := Open(t.Context(), url, Options{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	var wg sync.WaitGroup
	errs := make([]error, nodes)
	start := make(chan struct{})
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.Migrate(context.Background())
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: Migrate: %v", i, err)
		}
	}
	if err := stores[0].Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}

	ms, _ := migrations()
	conn := connect(t, url)
	var rows, distinct, latest int
	err := conn.QueryRow(t.Context(),
		"SELECT count(*), count(DISTINCT version), max(version) FROM jobd_schema_migrations").Scan(&rows, &distinct, &latest)
	if err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) || distinct != len(ms) || latest != ms[len(ms)-1].Version {
		t.Fatalf("jobd_schema_migrations: %d rows, %d versions, latest %d; want %d, %d, %d",
			rows, distinct, latest, len(ms), len(ms), ms[len(ms)-1].Version)
	}
	// The migrated schema answers.
	if _, err := stores[1].JobGet(t.Context(), uuid.New()); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("JobGet of an unknown id: %v, want job.ErrNotFound", err)
	}
}

// TestSchemaVersionBeforeMigrate: an empty database is at version 0, and
// at the latest once migrated.
func TestSchemaVersionBeforeMigrate(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), pgtest.NewDatabase(t), Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
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
