package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// QueueList returns every queue that has jobs or a setting, with job
// counts by state and its settings, read on one snapshot. See
// store.Store.
func (s *executor) QueueList(ctx context.Context) ([]store.QueueInfo, error) {
	queues := []store.QueueInfo{}
	err := s.readSnapshot(ctx, func(q querier) error {
		rows, err := q.Query(ctx, queueListSQL)
		if err != nil {
			return err
		}
		var (
			name   string
			paused bool
			state  pgtype.Text
			n      int64
		)
		_, err = pgx.ForEachRow(rows, []any{&name, &paused, &state, &n}, func() error {
			if len(queues) == 0 || queues[len(queues)-1].Name != name {
				queues = append(queues, store.QueueInfo{QueueSettings: store.QueueSettings{Name: name, Paused: paused}, Counts: map[job.State]int64{}})
			}
			if state.Valid {
				queues[len(queues)-1].Counts[job.State(state.String)] = n
			}
			return nil
		})
		if err != nil {
			return err
		}
		settings, err := queueSettings(ctx, q, s.now())
		if err != nil {
			return err
		}
		// Every queue with settings is in the first list.
		index := make(map[string]int, len(queues))
		for i, q := range queues {
			index[q.Name] = i
		}
		for _, st := range settings {
			if i, ok := index[st.Name]; ok {
				queues[i].QueueSettings = st
			}
		}
		return nil
	})
	if err != nil {
		return nil, errorf("postgres: list queues: %w", err)
	}
	return queues, nil
}

// QueueSetPaused pauses or resumes a queue on every node; resuming wakes
// its workers. See store.Store.
func (s *executor) QueueSetPaused(ctx context.Context, queue string, paused bool) error {
	if _, err := s.db.Exec(ctx, queueSetPausedSQL, s.now(), queue, paused); err != nil {
		return errorf("postgres: set queue %q paused=%t: %w", queue, paused, err)
	}
	if paused {
		return nil
	}
	return s.Wake(ctx, queue)
}

// purgeBatch is how many jobs one transaction of QueuePurge deletes at
// most: enough to make each round trip worth it, few enough that no
// transaction holds many row locks or much WAL.
const purgeBatch = 10000

// QueuePurge deletes the jobs of queue that are not running, and their
// journal, a batch per transaction. See store.Store.
func (s *executor) QueuePurge(ctx context.Context, queue string) (int64, error) {
	n, err := s.purge(ctx, queue, purgeBatch)
	if err != nil {
		return n, errorf("postgres: purge queue %q: %w", queue, err)
	}
	return n, nil
}

// purge is QueuePurge with the batch size as a parameter, for tests.
func (s *executor) purge(ctx context.Context, queue string, batch int) (int64, error) {
	var total int64
	for {
		var selected, deleted int64
		if err := s.db.QueryRow(ctx, queuePurgeSQL, queue, batch).Scan(&selected, &deleted); err != nil {
			return total, err
		}
		total += deleted
		if selected < int64(batch) {
			return total, nil
		}
	}
}

// LeaderAttempt takes or extends node's term as leader of name. See
// store.Store.
func (s *Store) LeaderAttempt(ctx context.Context, name, node string, ttl time.Duration) (bool, error) {
	rows, err := s.db.Query(ctx, leaderAttemptSQL, s.now(), name, node, ttl)
	if err != nil {
		return false, errorf("postgres: elect leader of %q: %w", name, err)
	}
	defer rows.Close()
	leads := rows.Next() // a row comes back only when node holds the term
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, errorf("postgres: elect leader of %q: %w", name, err)
	}
	return leads, nil
}

// LeaderResign ends node's term as leader of name, if it holds it.
func (s *Store) LeaderResign(ctx context.Context, name, node string) error {
	if _, err := s.db.Exec(ctx, leaderResignSQL, name, node); err != nil {
		return errorf("postgres: resign leader of %q: %w", name, err)
	}
	return nil
}
