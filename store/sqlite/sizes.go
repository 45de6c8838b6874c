package sqlite

import (
	"context"
	_ "embed" // the query below
)

//go:embed sql/table_sizes.sql
var tableSizesSQL string

// TableSizes reports, in bytes, the database file's pages in use and those
// on its free list (together, the file): a SQLite file never shrinks by
// itself, so a long run shows whether freed pages are reused rather than
// added.
func (s *Store) TableSizes(ctx context.Context) (map[string]int64, error) {
	var pageSize, pages, free int64
	row := s.r.QueryRowContext(ctx, tableSizesSQL)
	if err := row.Scan(&pageSize, &pages, &free); err != nil {
		return nil, errorf("sqlite: table sizes: %w", err)
	}
	return map[string]int64{"file.used": (pages - free) * pageSize, "file.free": free * pageSize}, nil
}
