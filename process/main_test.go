package process_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// drivers are the stores every test runs on.
var drivers = []string{"sqlite", "postgres"}

// eachStore runs fn as a subtest per driver.
func eachStore(t *testing.T, fn func(t *testing.T, driver string)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d, func(t *testing.T) { fn(t, d) })
	}
}

// openStore opens and migrates a fresh database of driver.
func openStore(t *testing.T, driver string) store.Store {
	t.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		err error
	)
	switch driver {
	case "sqlite":
		st, err = sqlite.Open(ctx, teststore.SQLitePath(t), sqlite.Options{})
	case "postgres":
		st, err = postgres.Open(ctx, migrated.NewDatabase(t), postgres.Options{Logger: slog.New(slog.DiscardHandler)})
	}
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", driver, err)
	}
	return storewatch.Wrap(st)
}

// jsonEq reports whether raw is the JSON value want (PostgreSQL's jsonb
// reformats what it stores).
func jsonEq(raw []byte, want string) bool {
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}
