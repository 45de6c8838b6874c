package postgres

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// QueueHealth reports the active jobs of every queue and the remote
// workers in one statement (sql/queue_health.sql). See store.Store.
func (s *executor) QueueHealth(ctx context.Context, params store.HealthParams) (*store.Health, error) {
	params = params.WithDefaults()
	rows, err := s.db.Query(ctx, queueHealthSQL, s.now(), params.MaxQueues, params.LockScan)
	if err != nil {
		return nil, errorf("postgres: queue health: %w", err)
	}
	defer rows.Close()
	h := &store.Health{Queues: []store.QueueHealth{}, Workers: []store.WorkerCount{}}
	for rows.Next() {
		var (
			what, name     string
			flag           bool
			n1, n2, n3, n4 int64
			at             pgtype.Timestamptz
		)
		if err := rows.Scan(&what, &name, &flag, &n1, &n2, &n3, &at, &n4); err != nil {
			return nil, errorf("postgres: queue health: %w", err)
		}
		switch what {
		case "queue":
			q := store.QueueHealth{Queue: name, Paused: flag, Queued: n1, Scheduled: n2, Running: n3, LockBlocked: n4}
			if at.Valid {
				t := at.Time
				q.OldestAvailable = &t
			}
			h.Queues = append(h.Queues, q)
		case "worker":
			h.Workers = append(h.Workers, store.WorkerCount{Status: store.WorkerStatus(name), Disabled: flag, Count: n1})
		case "now":
			h.At = at.Time
		}
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("postgres: queue health: %w", err)
	}
	slices.SortFunc(h.Queues, func(a, b store.QueueHealth) int { return strings.Compare(a.Queue, b.Queue) })
	return h, nil
}

// PoolStats reports the connection pool. See store.PoolReporter.
func (s *Store) PoolStats() []store.PoolStats {
	st := s.pool.Stat()
	return []store.PoolStats{{
		Pool: "main", MaxConns: int(st.MaxConns()), Open: int(st.TotalConns()),
		InUse: int(st.AcquiredConns()), Idle: int(st.IdleConns()),
		Waits: st.EmptyAcquireCount(), WaitDuration: st.EmptyAcquireWaitTime(),
	}}
}

// QueueThroughput counts the jobs finished since since by queue, minute
// and state (sql/queue_throughput.sql). See store.Store.
func (s *executor) QueueThroughput(ctx context.Context, since time.Time) ([]store.Throughput, error) {
	rows, err := s.db.Query(ctx, queueThroughputSQL, since)
	if err != nil {
		return nil, errorf("postgres: queue throughput: %w", err)
	}
	defer rows.Close()
	out := []store.Throughput{}
	for rows.Next() {
		var (
			t     store.Throughput
			state string
		)
		if err := rows.Scan(&t.Queue, &t.Minute, &state, &t.Count); err != nil {
			return nil, errorf("postgres: queue throughput: %w", err)
		}
		t.Minute, t.State = t.Minute.UTC(), job.State(state)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("postgres: queue throughput: %w", err)
	}
	return out, nil
}

// QueueDepth counts one queue's queued jobs from the claim index.
func (s *executor) QueueDepth(ctx context.Context, queue string) (store.QueueDepth, error) {
	var d store.QueueDepth
	if err := s.db.QueryRow(ctx, queueDepthSQL, s.now(), queue).Scan(&d.Available, &d.Scheduled); err != nil {
		return d, errorf("postgres: queue depth: %w", err)
	}
	return d, nil
}
