package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// ScheduleStore holds the schedules of periodic jobs. What a schedule
// means (its cron spec, its ticks, its job template) is package
// schedule's: the store keeps the rows, fences their changes and decides
// nothing.
type ScheduleStore interface {
	// ScheduleGet returns one schedule, or job.ErrNotFound.
	ScheduleGet(ctx context.Context, name string) (*Schedule, error)
	// ScheduleLock returns one schedule, or job.ErrNotFound, with its
	// row locked until the transaction ends (inside InTx: a concurrent
	// ScheduleLock, ScheduleAdvance or SchedulePut of the same name
	// waits for it). On a Store it is ScheduleGet.
	ScheduleLock(ctx context.Context, name string) (*Schedule, error)
	// ScheduleList returns every schedule, by name.
	ScheduleList(ctx context.Context) ([]Schedule, error)
	// ScheduleDue returns up to limit schedules that are not paused and
	// whose next_run_at is at or before now, earliest first.
	ScheduleDue(ctx context.Context, now time.Time, limit int) ([]Schedule, error)
	// SchedulePut creates the schedule s names or replaces its
	// definition (cron, timezone, template, overlap, catch-up, source)
	// and next_run_at, keeping its paused flag, last run, last job and
	// created_at, and returns it as stored. A schedule of source
	// ScheduleSourceConfig is replaced only by one of that source too:
	// a put of source ScheduleSourceAPI then changes nothing and fails
	// with ErrScheduleConfigured.
	SchedulePut(ctx context.Context, s Schedule) (*Schedule, error)
	// ScheduleDelete deletes a schedule (its jobs stay);
	// job.ErrNotFound when there is none.
	ScheduleDelete(ctx context.Context, name string) error
	// ScheduleSetPaused pauses or resumes a schedule and returns it;
	// a resume (paused false) also sets next_run_at to next, so that the
	// ticks that fell while it was paused do not run. job.ErrNotFound
	// when there is none.
	ScheduleSetPaused(ctx context.Context, name string, paused bool, next time.Time) (*Schedule, error)
	// ScheduleAdvance records a pass of the ticker or a trigger, fenced
	// by the next_run_at its caller read: it reports false, and changes
	// nothing, when a.From is set and the row's next_run_at is not From
	// any more (another pass advanced it), or the schedule is gone.
	ScheduleAdvance(ctx context.Context, a ScheduleAdvance) (bool, error)
}

// ErrScheduleConfigured: the schedule is set by the configuration of the
// server (jobd serve --schedules), which wins over the API for its name.
var ErrScheduleConfigured = errors.New("the schedule is set by the server's configuration (--schedules); change it there")

// The sources of a schedule.
const (
	// ScheduleSourceAPI: made through the API (or a Go program).
	ScheduleSourceAPI = "api"
	// ScheduleSourceConfig: a node's --schedules, applied at its start;
	// the API cannot replace it.
	ScheduleSourceConfig = "config"
)

// Schedule is a periodic job's definition and state, as the store keeps
// it.
type Schedule struct {
	Name string
	// Cron is the spec (package schedule parses it), in Timezone, an
	// IANA zone name.
	Cron     string
	Timezone string
	// Template is the job every tick inserts, as JSON (package
	// schedule's Template).
	Template json.RawMessage
	// Overlap is "allow" or "skip"; CatchUp "none", "one" or "all",
	// the latter bounded by CatchUpLimit.
	Overlap      string
	CatchUp      string
	CatchUpLimit int
	Paused       bool
	// Source is ScheduleSourceAPI or ScheduleSourceConfig.
	Source string
	// NextRunAt is the next tick to run; LastRunAt the last one that
	// inserted a job (or the last trigger), and LastJobID that job
	// (uuid.Nil for none).
	NextRunAt time.Time
	LastRunAt *time.Time
	LastJobID uuid.UUID
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ScheduleAdvance is what ScheduleAdvance writes.
type ScheduleAdvance struct {
	Name string
	// From, when not zero, is the next_run_at the caller read: the fence.
	From time.Time
	// Next, when not zero, becomes next_run_at.
	Next time.Time
	// LastJobID, when not uuid.Nil, becomes last_job_id, and LastRunAt
	// last_run_at.
	LastJobID uuid.UUID
	LastRunAt time.Time
}

// CheckSchedule refuses a schedule no store can keep: a name that is
// empty, over 128 bytes, not UTF-8 or with control characters, text with
// NUL, a template that is not JSON, a zero next_run_at.
func CheckSchedule(s Schedule) error {
	if s.Name == "" {
		return job.Invalid("name", "is required")
	}
	if err := job.CheckName("name", s.Name); err != nil {
		return err
	}
	for _, f := range []struct{ field, v string }{{"cron", s.Cron}, {"timezone", s.Timezone}} {
		if f.v == "" || len(f.v) > 256 {
			return job.Invalid(f.field, "must be 1 to 256 bytes")
		}
		if err := job.CheckText(f.field, f.v); err != nil {
			return err
		}
	}
	if len(s.Template) == 0 {
		return job.Invalid("job", "is required")
	}
	if err := job.CheckJSON("job", s.Template); err != nil {
		return err
	}
	if s.NextRunAt.IsZero() {
		return job.Invalid("next_run_at", "is required")
	}
	if s.Source != ScheduleSourceAPI && s.Source != ScheduleSourceConfig {
		return job.Invalid("source", "must be %q or %q, got %q", ScheduleSourceAPI, ScheduleSourceConfig, s.Source)
	}
	return nil
}
