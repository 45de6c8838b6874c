package sqlite

import (
	"context"
	"database/sql"
	"sort"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// QueueList returns every queue that has jobs or a setting, by name, with
// the count of its jobs in each state that has any.
func (s *executor) QueueList(ctx context.Context) ([]store.QueueInfo, error) {
	queues := make(map[string]*store.QueueInfo)
	get := func(name string) *store.QueueInfo {
		q, ok := queues[name]
		if !ok {
			q = &store.QueueInfo{QueueSettings: store.QueueSettings{Name: name}, Counts: make(map[job.State]int64)}
			queues[name] = q
		}
		return q
	}
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, queueCountsSQL)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				name, state string
				n           int64
			)
			if err := rows.Scan(&name, &state, &n); err != nil {
				return err
			}
			get(name).Counts[job.State(state)] = n
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()

		settings, err := readQueueSettings(ctx, tx, s.now())
		if err != nil {
			return err
		}
		for _, st := range settings {
			get(st.Name).QueueSettings = st
		}
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: list queues: %w", err)
	}
	list := make([]store.QueueInfo, 0, len(queues))
	for _, q := range queues {
		list = append(list, *q)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list, nil
}

// QueueSetPaused pauses or resumes a queue, creating its settings when it
// has none. Resuming wakes the queue's workers.
func (s *executor) QueueSetPaused(ctx context.Context, queue string, paused bool) error {
	if queue == "" {
		return job.Invalid("queue", "is required")
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, queueSetPausedSQL,
			sql.Named("name", queue),
			sql.Named("paused", paused),
			sql.Named("now", s.now()),
		)
		return err
	})
	if err != nil {
		return errorf("sqlite: pause queue %q: %w", queue, err)
	}
	if !paused {
		s.afterCommit(func() { s.wakeQueue(queue) })
	}
	return nil
}

// purgeBatch is how many jobs one transaction of QueuePurge deletes at
// most. SQLite has one writer: a smaller batch than PostgreSQL's keeps
// each hold of the write lock short, so claims and finishes of other
// queues go on between batches.
const purgeBatch = 1000

// QueuePurge deletes every job of queue that is not running, with their
// journals, a batch per write transaction; it returns how many jobs it
// deleted. Running jobs are left to their holders.
func (s *executor) QueuePurge(ctx context.Context, queue string) (int64, error) {
	n, err := s.purge(ctx, queue, purgeBatch)
	if err != nil {
		return n, errorf("sqlite: purge queue %q: %w", queue, err)
	}
	return n, nil
}

// purge is QueuePurge with the batch size as a parameter, for tests.
func (s *executor) purge(ctx context.Context, queue string, batch int) (int64, error) {
	var total int64
	for {
		var n int
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			var err error
			n, err = deleteJobs(ctx, tx, queuePurgeJobsSQL, sql.Named("queue", queue), sql.Named("limit", batch))
			return err
		})
		if err != nil {
			return total, err
		}
		total += int64(n)
		if n < batch {
			return total, nil
		}
	}
}

// LeaderAttempt makes node the leader of name for ttl when nobody else
// holds an unexpired term (a term has expired once its expiry <= now), or
// extends node's own term. It reports whether node leads.
func (s *Store) LeaderAttempt(ctx context.Context, name, node string, ttl time.Duration) (bool, error) {
	var leads bool
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		now := s.clock.Now()
		rows, err := tx.QueryContext(ctx, leaderAttemptSQL,
			sql.Named("name", name),
			sql.Named("node", node),
			sql.Named("now", now.UnixMicro()),
			sql.Named("expires_at", now.Add(ttl).UnixMicro()),
		)
		if err != nil {
			return err
		}
		defer rows.Close()
		leads = rows.Next()
		return rows.Err()
	})
	if err != nil {
		return false, errorf("sqlite: leader attempt %q by %q: %w", name, node, err)
	}
	return leads, nil
}

// LeaderResign ends node's term of name, if it holds it.
func (s *Store) LeaderResign(ctx context.Context, name, node string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, leaderResignSQL, sql.Named("name", name), sql.Named("node", node))
		return err
	})
	if err != nil {
		return errorf("sqlite: leader resign %q by %q: %w", name, node, err)
	}
	return nil
}
