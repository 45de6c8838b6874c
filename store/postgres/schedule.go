package postgres

import (
	"context"
	_ "embed" // the schedule queries
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/store"
)

var (
	//go:embed sql/schedule_get.sql
	scheduleGetSQL string
	//go:embed sql/schedule_lock.sql
	scheduleLockSQL string
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
	sc, err := scanSchedule(s.db.QueryRow(ctx, scheduleGetSQL, name))
	if err != nil {
		return nil, errorf("postgres: get schedule %q: %w", name, notFound(err))
	}
	return sc, nil
}

// ScheduleLock returns one schedule with its row locked (FOR UPDATE) in
// the transaction s runs in. See store.ScheduleStore.
func (s *executor) ScheduleLock(ctx context.Context, name string) (*store.Schedule, error) {
	sc, err := scanSchedule(s.db.QueryRow(ctx, scheduleLockSQL, name))
	if err != nil {
		return nil, errorf("postgres: lock schedule %q: %w", name, notFound(err))
	}
	return sc, nil
}

// ScheduleList returns every schedule, by name. See store.ScheduleStore.
func (s *executor) ScheduleList(ctx context.Context) ([]store.Schedule, error) {
	out, err := s.schedules(ctx, scheduleListSQL)
	if err != nil {
		return nil, errorf("postgres: list schedules: %w", err)
	}
	return out, nil
}

// ScheduleDue returns the schedules due at now. See store.ScheduleStore.
func (s *executor) ScheduleDue(ctx context.Context, now time.Time, limit int) ([]store.Schedule, error) {
	if limit <= 0 {
		return nil, nil
	}
	out, err := s.schedules(ctx, scheduleDueSQL, now, limit)
	if err != nil {
		return nil, errorf("postgres: due schedules: %w", err)
	}
	return out, nil
}

func (s *executor) schedules(ctx context.Context, query string, args ...any) ([]store.Schedule, error) {
	rows, err := s.db.Query(ctx, query, args...)
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
	got, err := scanSchedule(s.db.QueryRow(ctx, schedulePutSQL, s.now(), sc.Name, sc.Cron, sc.Timezone,
		[]byte(sc.Template), sc.Overlap, sc.CatchUp, sc.CatchUpLimit, sc.Source, sc.NextRunAt))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errorf("postgres: put schedule %q: %w", sc.Name, store.ErrScheduleConfigured)
	}
	if err != nil {
		return nil, errorf("postgres: put schedule %q: %w", sc.Name, err)
	}
	return got, nil
}

// ScheduleDelete deletes a schedule. See store.ScheduleStore.
func (s *executor) ScheduleDelete(ctx context.Context, name string) error {
	var got string
	if err := s.db.QueryRow(ctx, scheduleDeleteSQL, name).Scan(&got); err != nil {
		return errorf("postgres: delete schedule %q: %w", name, notFound(err))
	}
	return nil
}

// ScheduleSetPaused pauses or resumes a schedule. See store.ScheduleStore.
func (s *executor) ScheduleSetPaused(ctx context.Context, name string, paused bool, next time.Time) (*store.Schedule, error) {
	sc, err := scanSchedule(s.db.QueryRow(ctx, scheduleSetPausedSQL, s.now(), name, paused, timePtr(next)))
	if err != nil {
		return nil, errorf("postgres: pause schedule %q: %w", name, notFound(err))
	}
	return sc, nil
}

// ScheduleAdvance records a pass, fenced by the next run read. See
// store.ScheduleStore.
func (s *executor) ScheduleAdvance(ctx context.Context, a store.ScheduleAdvance) (bool, error) {
	var lastJob *[16]byte
	if a.LastJobID != uuid.Nil {
		id := pgUUID(a.LastJobID)
		lastJob = &id
	}
	var got string
	err := s.db.QueryRow(ctx, scheduleAdvanceSQL, s.now(), a.Name, timePtr(a.From), timePtr(a.Next), lastJob, timePtr(a.LastRunAt)).Scan(&got)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, errorf("postgres: advance schedule %q: %w", a.Name, err)
	}
	return true, nil
}

// scanSchedule reads one schedule row.
func scanSchedule(row pgx.Row) (*store.Schedule, error) {
	var (
		sc       store.Schedule
		template []byte
		lastJob  pgtype.UUID
	)
	err := row.Scan(&sc.Name, &sc.Cron, &sc.Timezone, &template, &sc.Overlap, &sc.CatchUp, &sc.CatchUpLimit,
		&sc.Paused, &sc.Source, &sc.NextRunAt, &sc.LastRunAt, &lastJob, &sc.CreatedAt, &sc.UpdatedAt)
	if err != nil {
		return nil, err
	}
	sc.Template = template
	if lastJob.Valid {
		sc.LastJobID = lastJob.Bytes
	}
	return &sc, nil
}
