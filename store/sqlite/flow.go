package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// QueueSettings returns every queue's stored settings, read on one
// snapshot, without reading a job. See store.Store.
func (s *executor) QueueSettings(ctx context.Context) ([]store.QueueSettings, error) {
	var out []store.QueueSettings
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = readQueueSettings(ctx, tx, s.now())
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: queue settings: %w", err)
	}
	return out, nil
}

// readQueueSettings reads every queue's settings at now (unix µs), by
// name, with the partitions' throttles (queue_settings.sql,
// queue_throttles.sql).
func readQueueSettings(ctx context.Context, tx *sql.Tx, now int64) ([]store.QueueSettings, error) {
	rows, err := tx.QueryContext(ctx, queueSettingsSQL, sql.Named("now", now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.QueueSettings{}
	index := make(map[string]int)
	for rows.Next() {
		var (
			q                                       store.QueueSettings
			global, partition, rateLimit, rateBurst sql.NullInt64
			ratePeriodUS, throttledUntil            sql.NullInt64
			rateBy, throttleBy                      sql.NullString
		)
		if err := rows.Scan(&q.Name, &q.Paused, &global, &partition, &rateLimit, &ratePeriodUS, &rateBy,
			&rateBurst, &throttleBy, &throttledUntil); err != nil {
			return nil, err
		}
		q.Limits = flow.Limits{GlobalLimit: int(global.Int64), PartitionLimit: int(partition.Int64), ThrottleBy: throttleBy.String}
		if rateLimit.Valid && ratePeriodUS.Valid {
			q.Limits.Rate = &flow.Rate{Limit: int(rateLimit.Int64), Period: time.Duration(ratePeriodUS.Int64) * time.Microsecond,
				By: rateBy.String, Burst: int(rateBurst.Int64)}
		}
		q.ThrottledUntil = fromNullMicro(throttledUntil)
		index[q.Name] = len(out)
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()

	rows, err = tx.QueryContext(ctx, queueThrottlesSQL, sql.Named("now", now), sql.Named("max", store.MaxThrottledListed))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			queue, key string
			until      int64
		)
		if err := rows.Scan(&queue, &key, &until); err != nil {
			return nil, err
		}
		if i, ok := index[queue]; ok {
			out[i].Throttled = append(out[i].Throttled, store.PartitionThrottle{PartitionKey: key, Until: fromMicro(until)})
		}
	}
	return out, rows.Err()
}

// QueueSetLimits replaces a queue's flow control, creating its settings
// row, and drops the partitions' state the new limits give no meaning to,
// in one write transaction; it wakes the queue's workers once it
// commits, unless the queue is paused. See store.Store.
func (s *executor) QueueSetLimits(ctx context.Context, queue string, limits flow.Limits) error {
	if queue == "" {
		return job.Invalid("queue", "is required")
	}
	if err := job.CheckName("queue", queue); err != nil {
		return err
	}
	if err := limits.Check(); err != nil {
		return err
	}
	var (
		rateLimit, ratePeriodUS, rateBurst any
		rateBy                             sql.NullString
	)
	if r := limits.Rate; r != nil {
		rateLimit, ratePeriodUS, rateBy = r.Limit, r.Period.Microseconds(), nullString(r.By)
		if r.Burst > 0 {
			rateBurst = r.Burst
		}
	}
	throttleBy := nullString(limits.ThrottleBy)
	var paused bool
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, queueSetLimitsSQL,
			sql.Named("name", queue),
			sql.Named("global_limit", positive(limits.GlobalLimit)),
			sql.Named("partition_limit", positive(limits.PartitionLimit)),
			sql.Named("rate_limit", rateLimit),
			sql.Named("rate_period_us", ratePeriodUS),
			sql.Named("rate_by", rateBy),
			sql.Named("rate_burst", rateBurst),
			sql.Named("throttle_by", throttleBy),
			sql.Named("now", s.now()),
		).Scan(&paused)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, queueClearPartitionsSQL, sql.Named("name", queue),
			sql.Named("throttle_by", throttleBy), sql.Named("rate_by", rateBy))
		return err
	})
	if err != nil {
		return errorf("sqlite: set the limits of queue %q: %w", queue, err)
	}
	s.afterCommit(func() {
		s.counted.set(queue, limits.GlobalLimit > 0 || limits.PartitionLimit > 0)
		if !paused {
			s.wakeQueue(queue)
		}
	})
	return nil
}

// QueueSetThrottleByIfUnset sets a queue's throttle_by where it has none,
// keeping every other setting, in one write transaction
// (queue_set_throttle_by.sql). See store.Store.
func (s *executor) QueueSetThrottleByIfUnset(ctx context.Context, queue, by string) (bool, error) {
	if err := store.CheckThrottleBy(queue, by); err != nil {
		return false, err
	}
	set := false
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var name string
		err := tx.QueryRowContext(ctx, queueSetThrottleBySQL, sql.Named("name", queue),
			sql.Named("throttle_by", by), sql.Named("now", s.now())).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			set = false
			return nil
		}
		set = err == nil
		return err
	})
	if err != nil {
		return false, errorf("sqlite: set the throttle_by of queue %q: %w", queue, err)
	}
	return set, nil
}

// positive is n, or nil (SQL NULL) when it is not positive (none).
func positive(n int) any {
	if n <= 0 {
		return nil
	}
	return n
}

// nullString maps "" to SQL NULL.
func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// applyThrottles sets the throttles decided transitions set
// (store.ThrottlesOf), in their write transaction: the whole queue's, or
// the partitions' of a queue whose throttle_by is partition_key.
func applyThrottles(ctx context.Context, tx *jobWrite, decided []store.Decided) error {
	throttles := store.ThrottlesOf(decided)
	if len(throttles) == 0 {
		return nil
	}
	type throttle struct {
		ID    string `json:"id"`
		Until int64  `json:"until"`
	}
	batch := make([]throttle, len(throttles))
	for i, t := range throttles {
		batch[i] = throttle{ID: t.ID.String(), Until: t.Until.UnixMicro()}
	}
	body, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	for _, query := range []string{flowThrottleQueuesSQL, flowThrottlePartitionsSQL} {
		if _, err := tx.ExecContext(ctx, query, sql.Named("throttles", string(body)), sql.Named("now", tx.now)); err != nil {
			return fmt.Errorf("throttle: %w", err)
		}
	}
	return nil
}
