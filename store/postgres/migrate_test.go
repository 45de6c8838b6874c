package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/pgtest"
	"github.com/jobd/jobd/job"
)

func TestMigrationsAreNumbered(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if m.version != i+1 {
			t.Fatalf("migration %d is %s (version %d), want version %d", i, m.name, m.version, i+1)
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
	if rows != len(ms) || distinct != len(ms) || latest != ms[len(ms)-1].version {
		t.Fatalf("jobd_schema_migrations: %d rows, %d versions, latest %d; want %d, %d, %d",
			rows, distinct, latest, len(ms), len(ms), ms[len(ms)-1].version)
	}
	// The migrated schema answers.
	if _, err := stores[1].JobGet(t.Context(), uuid.New()); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("JobGet of an unknown id: %v, want job.ErrNotFound", err)
	}
}
