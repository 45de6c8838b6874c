package postgres

import (
	"context"
	_ "embed" // the query below
)

//go:embed sql/table_sizes.sql
var tableSizesSQL string

// TableSizes reports the on-disk size, in bytes, of jobd's hot table (the
// jobs, their journals included) and of its indexes, so that a long run
// can show whether vacuum keeps up.
func (s *Store) TableSizes(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, tableSizesSQL)
	if err != nil {
		return nil, errorf("postgres: table sizes: %w", err)
	}
	defer rows.Close()
	sizes := make(map[string]int64)
	for rows.Next() {
		var name string
		var table, indexes int64
		if err := rows.Scan(&name, &table, &indexes); err != nil {
			return nil, errorf("postgres: table sizes: %w", err)
		}
		sizes[name] = table
		sizes[name+".indexes"] = indexes
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("postgres: table sizes: %w", err)
	}
	return sizes, nil
}
