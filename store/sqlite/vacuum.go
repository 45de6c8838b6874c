package sqlite

import "context"

// Vacuum rebuilds the database file (VACUUM) and refreshes the planner's
// statistics (ANALYZE), as an operator's maintenance would after a queue
// drained: the statistics then say the jobs table is empty, the state in
// which a burst of jobs must still be claimed at full speed. jobd bench
// --mode vacuum measures that.
func (s *Store) Vacuum(ctx context.Context) error {
	for _, stmt := range []string{"VACUUM", "ANALYZE"} {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			return errorf("sqlite: %s: %w", stmt, err)
		}
	}
	return nil
}
