package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// QueueSettings returns every queue's stored settings, in one statement
// that reads no job (queue_settings.sql). See store.Store.
func (s *executor) QueueSettings(ctx context.Context) ([]store.QueueSettings, error) {
	settings, err := queueSettings(ctx, s.db, s.now())
	if err != nil {
		return nil, errorf("postgres: queue settings: %w", err)
	}
	return settings, nil
}

// queueSettings runs queue_settings.sql on q at now.
func queueSettings(ctx context.Context, q querier, now *time.Time) ([]store.QueueSettings, error) {
	rows, err := q.Query(ctx, queueSettingsSQL, now, store.MaxThrottledListed)
	if err != nil {
		return nil, err
	}
	out := []store.QueueSettings{}
	var (
		name                                    string
		paused                                  bool
		global, partition, rateLimit, rateBurst *int
		ratePeriod                              *time.Duration
		rateBy, throttleBy                      *string
		throttledUntil                          *time.Time
		keys                                    []string
		untils                                  []time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &paused, &global, &partition, &rateLimit, &ratePeriod,
		&rateBy, &rateBurst, &throttleBy, &throttledUntil, &keys, &untils}, func() error {
		q := store.QueueSettings{Name: name, Paused: paused, Limits: flow.Limits{
			GlobalLimit:    deref(global),
			PartitionLimit: deref(partition),
			ThrottleBy:     deref(throttleBy),
		}}
		if rateLimit != nil && ratePeriod != nil {
			q.Limits.Rate = &flow.Rate{Limit: *rateLimit, Period: *ratePeriod, By: deref(rateBy), Burst: deref(rateBurst)}
		}
		if throttledUntil != nil {
			t := *throttledUntil // the scan's, which the next row may reuse
			q.ThrottledUntil = &t
		}
		for i, k := range keys {
			q.Throttled = append(q.Throttled, store.PartitionThrottle{PartitionKey: k, Until: untils[i]})
		}
		out = append(out, q)
		return nil
	})
	return out, err
}

// deref is *p, or the zero value for nil (SQL NULL).
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// QueueSetLimits replaces a queue's flow control in one statement
// (queue_set_limits.sql), which waits for a limited claim of the queue in
// progress, and wakes the queue's workers on commit. This node's view of
// the limited queues follows at once; the other nodes' claim nothing from
// a newly limited queue until theirs does (see limitedQueues). See
// store.Store.
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
	args := []any{s.now(), queue, positive(limits.GlobalLimit), positive(limits.PartitionLimit),
		nil, nil, nil, nil, nullText(limits.ThrottleBy)}
	if r := limits.Rate; r != nil {
		args[4], args[5], args[6], args[7] = r.Limit, r.Period, nullText(r.By), positive(r.Burst)
	}
	if _, err := s.db.Exec(ctx, queueSetLimitsSQL, args...); err != nil {
		return errorf("postgres: set the limits of queue %q: %w", queue, err)
	}
	s.afterCommit(func() { s.limited.set(queue, limits.Limited(), counts(limits)) })
	return nil
}

// QueueSetThrottleByIfUnset sets a queue's throttle_by where it has none,
// in one conditional statement (queue_set_throttle_by.sql) that keeps
// every other setting, a concurrent writer's included. This node's view
// of the limited queues follows at once. See store.Store.
func (s *executor) QueueSetThrottleByIfUnset(ctx context.Context, queue, by string) (bool, error) {
	if err := store.CheckThrottleBy(queue, by); err != nil {
		return false, err
	}
	var counted bool
	err := s.db.QueryRow(ctx, queueSetThrottleBySQL, s.now(), queue, by).Scan(&counted)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, errorf("postgres: set the throttle_by of queue %q: %w", queue, err)
	}
	s.afterCommit(func() { s.limited.set(queue, true, counted) })
	return true, nil
}

// positive maps a number that is not positive (none) to SQL NULL.
func positive(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}
