package sqlite

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// QueueHealth reports the active jobs of every queue and the remote
// workers in one statement (sql/queue_health.sql). See store.Store.
func (s *executor) QueueHealth(ctx context.Context, params store.HealthParams) (*store.Health, error) {
	params = params.WithDefaults()
	h := &store.Health{Queues: []store.QueueHealth{}, Workers: []store.WorkerCount{}}
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, queueHealthSQL, sql.Named("now", s.now()),
			sql.Named("max_queues", params.MaxQueues), sql.Named("lock_scan", params.LockScan))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				what, name     string
				flag           bool
				n1, n2, n3, n4 int64
				at             sql.NullInt64
			)
			if err := rows.Scan(&what, &name, &flag, &n1, &n2, &n3, &at, &n4); err != nil {
				return err
			}
			switch what {
			case "queue":
				h.Queues = append(h.Queues, store.QueueHealth{Queue: name, Paused: flag, Queued: n1, Scheduled: n2,
					Running: n3, OldestAvailable: fromNullMicro(at), LockBlocked: n4})
			case "worker":
				h.Workers = append(h.Workers, store.WorkerCount{Status: store.WorkerStatus(name), Disabled: flag, Count: n1})
			case "now":
				h.At = fromMicro(at.Int64)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, errorf("sqlite: queue health: %w", err)
	}
	slices.SortFunc(h.Queues, func(a, b store.QueueHealth) int { return strings.Compare(a.Queue, b.Queue) })
	return h, nil
}

// PoolStats reports the writer's and the readers' connection pools. See
// store.PoolReporter.
func (s *Store) PoolStats() []store.PoolStats {
	out := make([]store.PoolStats, 0, 2)
	for _, p := range []struct {
		name string
		db   *sql.DB
	}{{"writer", s.w}, {"reader", s.r}} {
		st := p.db.Stats()
		out = append(out, store.PoolStats{
			Pool: p.name, MaxConns: st.MaxOpenConnections, Open: st.OpenConnections,
			InUse: st.InUse, Idle: st.Idle, Waits: st.WaitCount, WaitDuration: st.WaitDuration,
		})
	}
	return out
}

// QueueThroughput counts the jobs finished since since by queue, minute
// and state (sql/queue_throughput.sql). See store.Store.
func (s *executor) QueueThroughput(ctx context.Context, since time.Time) ([]store.Throughput, error) {
	out := []store.Throughput{}
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, queueThroughputSQL, sql.Named("since", since.UnixMicro()))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				t      store.Throughput
				minute int64
				state  string
			)
			if err := rows.Scan(&t.Queue, &minute, &state, &t.Count); err != nil {
				return err
			}
			t.Minute, t.State = fromMicro(minute), job.State(state)
			out = append(out, t)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, errorf("sqlite: queue throughput: %w", err)
	}
	return out, nil
}

// QueueDepth counts one queue's queued jobs from the claim index.
func (s *executor) QueueDepth(ctx context.Context, queue string) (store.QueueDepth, error) {
	var d store.QueueDepth
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, queueDepthSQL, sql.Named("now", s.now()), sql.Named("queue", queue)).Scan(&d.Available, &d.Scheduled)
	})
	if err != nil {
		return d, errorf("sqlite: queue depth: %w", err)
	}
	return d, nil
}
