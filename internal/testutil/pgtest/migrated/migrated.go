// Package migrated gives tests a PostgreSQL database with jobd's schema:
// a copy of a template migrated once per test binary (see
// pgtest.Template), instead of a database migrated test by test. The
// PostgreSQL driver's own tests, which this package's import of the
// driver would make a cycle, declare their template themselves; its
// migration tests start from pgtest.NewDatabase, empty.
package migrated

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/store/postgres"
)

var template = pgtest.NewTemplate(func(ctx context.Context, url string) error {
	s, err := postgres.Open(ctx, url, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Migrate(ctx)
})

// NewDatabase creates a migrated database for t and returns its URL; it
// is dropped when t ends. The test binary's TestMain must call
// pgtest.Main.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return template.NewDatabase(t)
}
