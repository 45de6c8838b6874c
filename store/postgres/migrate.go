package postgres

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/store"
)

//go:embed migrations/*.up.sql
var migrationFiles embed.FS

// migrateLockKey names the advisory lock that serialises Migrate across
// nodes ("jobdmigr" in ASCII).
const migrateLockKey int64 = 0x6a6f62646d696772

// migrations returns the embedded migrations in version order.
func migrations() ([]store.Migration, error) {
	return store.ReadMigrations(migrationFiles, "migrations")
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
		if version > 0 && m.Version > version {
			break
		}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			return applyMigration(ctx, tx, m)
		})
		if err != nil {
			return errorf("postgres: migration %s: %w", m.Name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, tx pgx.Tx, m store.Migration) error {
	if _, err := tx.Exec(ctx, migrateLockSQL, migrateLockKey); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, migrateTableSQL); err != nil {
		return err
	}
	var applied bool
	if err := tx.QueryRow(ctx, migrateAppliedSQL, m.Version).Scan(&applied); err != nil {
		return err
	}
	if applied {
		return nil
	}
	// Without arguments pgx sends the file as one simple-protocol query,
	// which may hold several statements.
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, migrateRecordSQL, m.Version)
	return err
}

// SchemaVersion reads how far the database's schema is migrated.
func (s *Store) SchemaVersion(ctx context.Context) (store.SchemaVersion, error) {
	ms, err := migrations()
	if err != nil {
		return store.SchemaVersion{}, errorf("postgres: schema version: %w", err)
	}
	v := store.SchemaVersion{Latest: store.LatestVersion(ms)}
	var migrated bool
	if err := s.pool.QueryRow(ctx, schemaTableSQL).Scan(&migrated); err != nil {
		return store.SchemaVersion{}, errorf("postgres: schema version: %w", err)
	}
	if !migrated {
		return v, nil
	}
	if err := s.pool.QueryRow(ctx, schemaVersionSQL).Scan(&v.Current); err != nil {
		return store.SchemaVersion{}, errorf("postgres: schema version: %w", err)
	}
	return v, nil
}
