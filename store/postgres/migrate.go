package postgres

import (
	"context"
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// migrateLockKey names the advisory lock that serialises Migrate across
// nodes ("jobdmigr" in ASCII).
const migrateLockKey int64 = 0x6a6f62646d696772

// migration is one numbered schema change, migrations/NNN_name.up.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	seen := make(map[int]string)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".up.sql")
		num, _, ok := strings.Cut(name, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration file %q: want NNN_name.up.sql", e.Name())
		}
		if other, dup := seen[version]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", other, e.Name(), version)
		}
		seen[version] = e.Name()
		body, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: version, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// Migrate applies the migrations the database lacks, each in its own
// transaction under a transaction-scoped advisory lock, so several nodes
// starting at once apply each exactly once. It is idempotent.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, 0)
}

// migrateTo applies the migrations the database lacks up to version
// (0: all of them), as Migrate does. Tests create a schema of the past
// with it, to migrate its data.
func (s *Store) migrateTo(ctx context.Context, version int) error {
	ms, err := migrations()
	if err != nil {
		return errorf("postgres: migrate: %w", err)
	}
	for _, m := range ms {
		if version > 0 && m.version > version {
			break
		}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			return applyMigration(ctx, tx, m)
		})
		if err != nil {
			return errorf("postgres: migration %s: %w", m.name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, tx pgx.Tx, m migration) error {
	if _, err := tx.Exec(ctx, migrateLockSQL, migrateLockKey); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, migrateTableSQL); err != nil {
		return err
	}
	var applied bool
	if err := tx.QueryRow(ctx, migrateAppliedSQL, m.version).Scan(&applied); err != nil {
		return err
	}
	if applied {
		return nil
	}
	// Without arguments pgx sends the file as one simple-protocol query,
	// which may hold several statements.
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, migrateRecordSQL, m.version)
	return err
}
