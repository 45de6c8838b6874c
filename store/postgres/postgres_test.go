package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migrated is the schema every test database but the migration tests'
// starts from, migrated once per test binary.
var migrated = pgtest.NewTemplate(func(ctx context.Context, url string) error {
	s, err := Open(ctx, url, Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Migrate(ctx)
})

// migratedDatabase creates a database with the schema for t and returns
// its URL; it is dropped when t ends.
func migratedDatabase(t testing.TB) string {
	t.Helper()
	return migrated.NewDatabase(t)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Clock) store.Store {
		return openStore(t, migratedDatabase(t), c)
	}, func(t *testing.T, s store.Store) store.Store {
		node := s.(*Store)
		return openStore(t, node.pool.Config().ConnConfig.ConnString(), node.clock)
	})
}

// openStore opens and migrates a store on url, closed when t ends.
func openStore(t testing.TB, url string, c clock.Clock) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, Options{Clock: c})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

// journalEntries counts the journal entries of every job in the
// database (what a count of the journal table's rows once was).
func journalEntries(t testing.TB, s *Store) int {
	t.Helper()
	rows, err := s.pool.Query(t.Context(), "SELECT id FROM jobd_jobs")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[[16]byte])
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, id := range ids {
		evs, err := s.JobEvents(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		n += len(evs)
	}
	return n
}

// connect opens a plain connection to url, closed when t ends.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}
