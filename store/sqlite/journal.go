package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// JobEvents returns a job's journal, oldest first, rendered from its row
// (job.Journal); an unknown job has none.
func (s *executor) JobEvents(ctx context.Context, id uuid.UUID) ([]job.Event, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: events of job %s: %w", id, err)
	}
	var (
		j                       job.Job
		rowID, state            string
		createdAt               int64
		attemptedAt, finishedAt sql.NullInt64
		journal                 sql.NullString
	)
	err = q.QueryRowContext(ctx, jobEventsSQL, id.String()).Scan(&rowID, &state, &j.Attempt, &j.LeaseOwner,
		&createdAt, &attemptedAt, &finishedAt, &journal, &j.Dependencies)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, errorf("sqlite: events of job %s: %w", id, err)
	}
	if j.ID, err = uuid.Parse(rowID); err != nil {
		return nil, errorf("sqlite: events of job %s: %w", id, err)
	}
	j.State = job.State(state)
	j.CreatedAt, j.AttemptedAt, j.FinishedAt = fromMicro(createdAt), fromNullMicro(attemptedAt), fromNullMicro(finishedAt)
	stored, err := job.ParseJournal([]byte(journal.String))
	if err != nil {
		return nil, errorf("sqlite: events of job %s: %w", id, err)
	}
	return job.Journal(&j, stored), nil
}
