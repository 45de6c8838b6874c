package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// journal collects the events of one write transaction and appends them
// all, stamped with the transaction's time, in one statement.
type journal struct {
	at     int64
	events []journalEntry
}

type journalEntry struct {
	JobID   string        `json:"job_id"`
	Kind    job.EventKind `json:"kind"`
	Attempt int           `json:"attempt"`
	Detail  string        `json:"detail"`
}

func newJournal(at int64) *journal { return &journal{at: at} }

// add records one event of the job id, to be written by flush.
func (j *journal) add(id uuid.UUID, kind job.EventKind, attempt int, detail string) {
	j.events = append(j.events, journalEntry{JobID: id.String(), Kind: kind, Attempt: attempt, Detail: detail})
}

// flush writes the events added so far, in order.
func (j *journal) flush(ctx context.Context, tx *sql.Tx) error {
	if len(j.events) == 0 {
		return nil
	}
	body, err := json.Marshal(j.events)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := tx.ExecContext(ctx, eventsInsertSQL, sql.Named("at", j.at), sql.Named("events", string(body))); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.events = j.events[:0]
	return nil
}

// JobEvents returns a job's journal, oldest first; an unknown job has
// none.
func (s *executor) JobEvents(ctx context.Context, id uuid.UUID) ([]job.Event, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: events of job %s: %w", id, err)
	}
	rows, err := q.QueryContext(ctx, jobEventsSQL, id.String())
	if err != nil {
		return nil, errorf("sqlite: events of job %s: %w", id, err)
	}
	defer rows.Close()
	var events []job.Event
	for rows.Next() {
		var (
			e     job.Event
			jobID string
			at    int64
			kind  string
		)
		if err := rows.Scan(&e.ID, &jobID, &at, &kind, &e.Attempt, &e.Detail); err != nil {
			return nil, errorf("sqlite: events of job %s: %w", id, err)
		}
		if e.JobID, err = uuid.Parse(jobID); err != nil {
			return nil, errorf("sqlite: events of job %s: %w", id, err)
		}
		e.At = fromMicro(at)
		e.Kind = job.EventKind(kind)
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("sqlite: events of job %s: %w", id, err)
	}
	return events, nil
}
