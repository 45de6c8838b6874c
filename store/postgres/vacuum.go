package postgres

import (
	"context"
	_ "embed" // the query below

	"github.com/jackc/pgx/v5"
)

//go:embed sql/vacuum_tables.sql
var vacuumTablesSQL string

// Vacuum runs VACUUM (DISABLE_PAGE_SKIPPING) on each of jobd's tables, as
// autovacuum would after a queue drains, but every time: a plain VACUUM
// extrapolates its statistics over the pages it skips, so what it leaves
// depends on the table's history. A drained table then keeps its pages
// while its statistics say it is empty (reltuples = 0): the state in
// which a burst of jobs must still be claimed at full speed. jobd bench
// --mode vacuum measures that.
func (s *Store) Vacuum(ctx context.Context) error {
	rows, err := s.pool.Query(ctx, vacuumTablesSQL)
	if err != nil {
		return errorf("postgres: vacuum: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return errorf("postgres: vacuum: %w", err)
	}
	for _, t := range tables {
		if _, err := s.pool.Exec(ctx, "VACUUM (DISABLE_PAGE_SKIPPING) "+pgx.Identifier{t}.Sanitize()); err != nil {
			return errorf("postgres: vacuum %s: %w", t, err)
		}
	}
	return nil
}
