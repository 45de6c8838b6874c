package sqlite

import (
	"context"
	"database/sql"
	"embed"

	"github.com/jobd/jobd/store"
)

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// migrations returns the embedded migrations in version order.
func migrations() ([]store.Migration, error) {
	return store.ReadMigrations(migrationFiles, "migrations")
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
		if version > 0 && m.Version > version {
			break
		}
		var applied bool
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, migrationsCreateSQL); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, migrationAppliedSQL, m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, migrationRecordSQL, m.Version, s.now()); err != nil {
				return err
			}
			applied = true
			return nil
		})
		if err != nil {
			return errorf("sqlite: migrate %s: %w", m.Name, err)
		}
		if applied {
			s.log.InfoContext(ctx, "sqlite: migration applied", "version", m.Version, "name", m.Name, "path", s.path)
		}
	}
	return nil
}

// SchemaVersion reads how far the database's schema is migrated.
func (s *Store) SchemaVersion(ctx context.Context) (store.SchemaVersion, error) {
	ms, err := migrations()
	if err != nil {
		return store.SchemaVersion{}, errorf("sqlite: schema version: %w", err)
	}
	v := store.SchemaVersion{Latest: store.LatestVersion(ms)}
	var tables int
	if err := s.r.QueryRowContext(ctx, schemaTableSQL).Scan(&tables); err != nil {
		return store.SchemaVersion{}, errorf("sqlite: schema version: %w", err)
	}
	if tables == 0 {
		return v, nil
	}
	if err := s.r.QueryRowContext(ctx, schemaVersionSQL).Scan(&v.Current); err != nil {
		return store.SchemaVersion{}, errorf("sqlite: schema version: %w", err)
	}
	return v, nil
}
