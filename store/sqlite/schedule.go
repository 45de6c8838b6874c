package sqlite

import (
	"context"
	"database/sql"
	_ "embed" // the schedule queries
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var (
	//go:embed sql/schedule_get.sql
	scheduleGetSQL string
	//go:embed sql/schedule_list.sql
	scheduleListSQL string
	//go:embed sql/schedule_due.sql
	scheduleDueSQL string
	//go:embed sql/schedule_put.sql
	schedulePutSQL string
	//go:embed sql/schedule_delete.sql
	scheduleDeleteSQL string
	//go:embed sql/schedule_set_paused.sql
	scheduleSetPausedSQL string
	//go:embed sql/schedule_advance.sql
	scheduleAdvanceSQL string
)

// ScheduleGet returns one schedule. See store.ScheduleStore.
func (s *executor) ScheduleGet(ctx context.Context, name string) (*store.Schedule, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: get schedule %q: %w", name, err)
	}
	sc, err := scanSchedule(q.QueryRowContext(ctx, scheduleGetSQL, sql.Named("name", name)))
	if err != nil {
		return nil, errorf("sqlite: get schedule %q: %w", name, err)
	}
	return sc, nil
}

// ScheduleLock returns one schedule. Inside InTx, the write transaction
// holds the whole database's write lock already: nothing else changes the
// row until it ends. See store.ScheduleStore.
func (s *executor) ScheduleLock(ctx context.Context, name string) (*store.Schedule, error) {
	return s.ScheduleGet(ctx, name)
}

// ScheduleList returns every schedule, by name. See store.ScheduleStore.
func (s *executor) ScheduleList(ctx context.Context) ([]store.Schedule, error) {
	out, err := s.schedules(ctx, scheduleListSQL)
	if err != nil {
		return nil, errorf("sqlite: list schedules: %w", err)
	}
	return out, nil
}

// ScheduleDue returns the schedules due at now. See store.ScheduleStore.
func (s *executor) ScheduleDue(ctx context.Context, now time.Time, limit int) ([]store.Schedule, error) {
	if limit <= 0 {
		return nil, nil
	}
	out, err := s.schedules(ctx, scheduleDueSQL, sql.Named("now", now.UnixMicro()), sql.Named("limit", limit))
	if err != nil {
		return nil, errorf("sqlite: due schedules: %w", err)
	}
	return out, nil
}

func (s *executor) schedules(ctx context.Context, query string, args ...any) ([]store.Schedule, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.Schedule{}
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *sc)
	}
	return out, rows.Err()
}

// SchedulePut creates or replaces a schedule, fenced by its source. See
// store.ScheduleStore.
func (s *executor) SchedulePut(ctx context.Context, sc store.Schedule) (*store.Schedule, error) {
	if err := store.CheckSchedule(sc); err != nil {
		return nil, err
	}
	var got *store.Schedule
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = scanSchedule(tx.QueryRowContext(ctx, schedulePutSQL,
			sql.Named("name", sc.Name), sql.Named("cron", sc.Cron), sql.Named("timezone", sc.Timezone),
			sql.Named("template", string(sc.Template)), sql.Named("overlap", sc.Overlap),
			sql.Named("catch_up", sc.CatchUp), sql.Named("catch_up_limit", sc.CatchUpLimit),
			sql.Named("source", sc.Source), sql.Named("next_run_at", sc.NextRunAt.UnixMicro()),
			sql.Named("now", s.now()),
		))
		return err
	})
	if errors.Is(err, job.ErrNotFound) {
		err = store.ErrScheduleConfigured
	}
	if err != nil {
		return nil, errorf("sqlite: put schedule %q: %w", sc.Name, err)
	}
	return got, nil
}

// ScheduleDelete deletes a schedule. See store.ScheduleStore.
func (s *executor) ScheduleDelete(ctx context.Context, name string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, scheduleDeleteSQL, sql.Named("name", name))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, job.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return errorf("sqlite: delete schedule %q: %w", name, err)
	}
	return nil
}

// ScheduleSetPaused pauses or resumes a schedule. See store.ScheduleStore.
func (s *executor) ScheduleSetPaused(ctx context.Context, name string, paused bool, next time.Time) (*store.Schedule, error) {
	var got *store.Schedule
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		got, err = scanSchedule(tx.QueryRowContext(ctx, scheduleSetPausedSQL,
			sql.Named("name", name), sql.Named("paused", paused), sql.Named("next", microOf(next)),
			sql.Named("now", s.now())))
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: pause schedule %q: %w", name, err)
	}
	return got, nil
}

// ScheduleAdvance records a pass, fenced by the next run read. See
// store.ScheduleStore.
func (s *executor) ScheduleAdvance(ctx context.Context, a store.ScheduleAdvance) (bool, error) {
	var lastJob any
	if a.LastJobID != uuid.Nil {
		lastJob = a.LastJobID.String()
	}
	var n int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, scheduleAdvanceSQL,
			sql.Named("name", a.Name), sql.Named("from", microOf(a.From)), sql.Named("next", microOf(a.Next)),
			sql.Named("last_job", lastJob), sql.Named("last_run_at", microOf(a.LastRunAt)),
			sql.Named("now", s.now()))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, errorf("sqlite: advance schedule %q: %w", a.Name, err)
	}
	return n == 1, nil
}

// scanSchedule reads one schedule row; no row is job.ErrNotFound.
func scanSchedule(sc scanner) (*store.Schedule, error) {
	var (
		s                      store.Schedule
		next, created, updated int64
		lastRun                sql.NullInt64
		lastJob                sql.NullString
		template               string
		paused                 int64
	)
	err := sc.Scan(&s.Name, &s.Cron, &s.Timezone, &template, &s.Overlap, &s.CatchUp, &s.CatchUpLimit,
		&paused, &s.Source, &next, &lastRun, &lastJob, &created, &updated)
	if err != nil {
		return nil, notFound(err)
	}
	s.Template = []byte(template)
	s.Paused = paused != 0
	s.NextRunAt = fromMicro(next)
	s.LastRunAt = fromNullMicro(lastRun)
	s.CreatedAt = fromMicro(created)
	s.UpdatedAt = fromMicro(updated)
	if lastJob.Valid {
		if s.LastJobID, err = uuid.Parse(lastJob.String); err != nil {
			return nil, fmt.Errorf("schedule %q: last job id: %w", s.Name, err)
		}
	}
	return &s, nil
}
