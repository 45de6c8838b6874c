package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. A file is
// named NNN_name.up.sql.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.up.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, path := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".up.sql")
		num, _, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad version: %w", path, err)
		}
		body, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// Migrate applies the migrations not yet applied, each in its own write
// transaction with its record in jobd_schema_migrations. It is idempotent,
// and safe from several processes at once: a transaction takes SQLite's
// write lock first, then checks whether its version is already there.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, 0)
}

// migrateTo applies the migrations not yet applied up to version (0: all
// of them), as Migrate does. Tests create a schema of the past with it,
// to migrate its data.
func (s *Store) migrateTo(ctx context.Context, version int) error {
	ms, err := migrations()
	if err != nil {
		return errorf("sqlite: migrate: %w", err)
	}
	for _, m := range ms {
		if version > 0 && m.version > version {
			break
		}
		var applied bool
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, migrationsCreateSQL); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, migrationAppliedSQL, m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, migrationRecordSQL, m.version, s.now()); err != nil {
				return err
			}
			applied = true
			return nil
		})
		if err != nil {
			return errorf("sqlite: migrate %s: %w", m.name, err)
		}
		if applied {
			s.log.InfoContext(ctx, "sqlite: migration applied", "version", m.version, "name", m.name, "path", s.path)
		}
	}
	return nil
}
