package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/filetemplate"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/storetest"
)

// openAt opens and migrates a Store on the file at path, closed when t
// ends.
func openAt(t testing.TB, path string, c clock.Clock) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{Clock: c})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

// journalEntries counts the journal entries of every job in the
// database (what a count of the journal table's rows once was).
func journalEntries(t testing.TB, s *Store) int {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), "SELECT id FROM jobd_jobs")
	if err != nil {
		t.Fatal(err)
	}
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
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

// openTemp opens a migrated Store on a new file of its own.
func openTemp(t testing.TB, c clock.Clock) *Store {
	t.Helper()
	return openAt(t, migrated.NewCopy(t, "jobd.db"), c)
}

// migrated is a database migrated once, copied for each openTemp.
var migrated = filetemplate.New(func(path string) error {
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		return err
	}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return err
	}
	return s.Close()
})

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, c clock.Clock) store.Store {
		return openTemp(t, c)
	}, func(t *testing.T, s store.Store) store.Store {
		node := s.(*Store)
		return openAt(t, node.path, node.clock)
	})
}

// TestPragmas checks the connection settings the DSN asks for: durable
// WAL writes, a busy timeout, and read-only readers.
func TestPragmas(t *testing.T) {
	s := openTemp(t, nil)
	for _, tc := range []struct {
		db     *sql.DB
		pragma string
		want   string
	}{
		{s.w, "journal_mode", "wal"},
		{s.w, "synchronous", "2"}, // FULL
		{s.w, "foreign_keys", "1"},
		{s.w, "busy_timeout", strconv.Itoa(busyTimeoutMS)},
		{s.r, "query_only", "1"},
		{s.r, "busy_timeout", strconv.Itoa(busyTimeoutMS)},
	} {
		var got string
		if err := tc.db.QueryRowContext(t.Context(), "PRAGMA "+tc.pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", tc.pragma, err)
		}
		if got != tc.want {
			t.Errorf("PRAGMA %s = %s, want %s", tc.pragma, got, tc.want)
		}
	}
}
