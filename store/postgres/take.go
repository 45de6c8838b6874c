package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// staleReads bounds how often JobTake runs its statement again because a
// concurrent write made the row it read stale (see job_take.sql). Each
// time needs another write to the same job in between, so a few are
// plenty.
const staleReads = 5

// JobTake deletes a finished job with its journal and returns it; a
// queued or running job is left as it is (job.ErrWrongState). See
// store.Store.
func (s *executor) JobTake(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	for try := 0; ; try++ {
		var taken bool
		var r jobRow
		err := s.db.QueryRow(ctx, jobTakeSQL, pgUUID(id)).Scan(append([]any{&taken}, r.dest()...)...)
		if err != nil {
			return nil, errorf("postgres: take job %s: %w", id, notFound(err))
		}
		j, err := r.job()
		if err != nil {
			return nil, errorf("postgres: take job %s: %w", id, err)
		}
		switch {
		case taken:
			return j, nil
		case !j.State.Final():
			return nil, errorf("postgres: take job %s: job is %s: %w", id, j.State, job.ErrWrongState)
		case j.WorkflowID != uuid.Nil:
			return nil, errorf("postgres: take job %s: it is a task of workflow %s, which it goes with: %w", id, j.WorkflowID, job.ErrWrongState)
		case try == staleReads:
			// Still stale after several tries: another take (or retry) keeps
			// winning the row; report it gone rather than loop.
			return nil, errorf("postgres: take job %s: %w", id, job.ErrNotFound)
		}
		// A final row that was not deleted is a stale read (see
		// job_take.sql): look again on a new snapshot.
	}
}

// JobPruneQueue deletes old finished jobs of one queue and their journal.
// See store.Store.
func (s *executor) JobPruneQueue(ctx context.Context, queue string, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	if err := s.db.QueryRow(ctx, pruneQueueSQL, queue, before, limit).Scan(&n); err != nil {
		return 0, errorf("postgres: prune finished jobs of queue %q: %w", queue, err)
	}
	return n, nil
}
