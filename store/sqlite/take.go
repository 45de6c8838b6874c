package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// JobTake deletes a finished job with its journal and returns it as it
// was; job.ErrWrongState (and nothing deleted) when the job is queued or
// running, job.ErrNotFound when there is none.
func (s *executor) JobTake(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	var j *job.Job
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		cur, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
		if err != nil {
			return err
		}
		if !cur.State.Final() {
			return fmt.Errorf("job is %s: %w", cur.State, job.ErrWrongState)
		}
		if cur.WorkflowID != uuid.Nil {
			return fmt.Errorf("it is a task of workflow %s, which it goes with: %w", cur.WorkflowID, job.ErrWrongState)
		}
		// The write lock is held since the read: the job is still final.
		if _, err := deleteJobs(ctx, tx, jobTakeSQL, sql.Named("id", id.String())); err != nil {
			return err
		}
		j = cur
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: take job %s: %w", id, err)
	}
	return j, nil
}

// JobPruneQueue deletes up to limit finished jobs of queue whose
// finished_at is before before, oldest first, and their events.
func (s *executor) JobPruneQueue(ctx context.Context, queue string, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = deleteJobs(ctx, tx, pruneQueueJobsSQL,
			sql.Named("queue", queue),
			sql.Named("before", before.UnixMicro()),
			sql.Named("limit", limit),
		)
		return err
	})
	if err != nil {
		return 0, errorf("sqlite: prune queue %q: %w", queue, err)
	}
	return n, nil
}
