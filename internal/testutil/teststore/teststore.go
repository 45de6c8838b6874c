// Package teststore opens, for tests, a migrated store of either driver:
// SQLite in a copy of a database migrated once, in the test's temporary
// directory, PostgreSQL in a
// copy of the migrated template (internal/testutil/pgtest/migrated; the test
// binary's TestMain must call pgtest.Main). The store closes when the
// test ends.
package teststore

import (
	"context"
	"testing"

	"github.com/jobd/jobd/internal/testutil/filetemplate"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

// Drivers are the stores a test of both runs against.
var Drivers = []string{"sqlite", "postgres"}

// Open opens a migrated store of driver ("sqlite" or "postgres") on a
// fresh database.
func Open(t testing.TB, driver string) store.Store {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	switch driver {
	case "sqlite":
		st, err = sqlite.Open(ctx, SQLitePath(t), sqlite.Options{})
	case "postgres":
		st, err = postgres.Open(ctx, migrated.NewDatabase(t), postgres.Options{})
	default:
		t.Fatalf("teststore: no driver %q", driver)
	}
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", driver, err)
	}
	return st
}

// SQLitePath returns the path of a new SQLite database, already migrated,
// in t's temporary directory: a copy of one migrated once per test
// binary.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return sqliteMigrated.NewCopy(t, "jobd.db")
}

// sqliteMigrated is an SQLite database migrated once, copied for each
// SQLitePath.
var sqliteMigrated = filetemplate.New(func(path string) error {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return err
	}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return err
	}
	return s.Close()
})

// Each runs fn as a parallel subtest per driver, on a store of its own;
// t itself runs in parallel with the other tests (it must not call
// t.Parallel itself, nor Setenv).
func Each(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Helper()
	t.Parallel()
	for _, d := range Drivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, d))
		})
	}
}
