package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// DutyTicker names the ticker among the maintenance duties.
const DutyTicker = "schedule ticker"

// DefaultTickInterval is the ticker's default period: a tick's job is
// inserted within about this long of its time.
const DefaultTickInterval = time.Second

// Config configures a Scheduler. Zero fields take the documented
// defaults.
type Config struct {
	// Store keeps the schedules and their jobs. Required.
	Store store.Store
	// Clock tells the ticks' time; default clock.Real. (The store's
	// clock should be the same.)
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// MaxArgsBytes bounds a template's args; default
	// job.DefaultMaxArgsBytes.
	MaxArgsBytes int
	// TickInterval is the ticker's period; default DefaultTickInterval.
	TickInterval time.Duration
}

// Scheduler holds the operations on schedules that every front end
// shares (the HTTP API, the dashboard, jobd serve's --schedules): each
// rule lives here once. Create it with New.
type Scheduler struct {
	cfg   Config
	store store.Store
	clock clock.Clock
	log   *slog.Logger
}

// New returns a Scheduler over cfg.Store.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Store == nil {
		return nil, errors.New("schedule: Config.Store is required")
	}
	if cfg.TickInterval < 0 {
		return nil, fmt.Errorf("schedule: the tick interval must not be negative, got %s", cfg.TickInterval)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TickInterval == 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	return &Scheduler{cfg: cfg, store: cfg.Store, clock: cfg.Clock, log: cfg.Logger}, nil
}

// Duty is the ticker, a leader duty of the maintenance runner: one
// node inserts the jobs of the due ticks (see Tick).
func (s *Scheduler) Duty() engine.Duty {
	return engine.Duty{Name: DutyTicker, Interval: s.cfg.TickInterval, Leader: true, Pass: func(ctx context.Context) error {
		_, err := s.Tick(ctx)
		return err
	}}
}

// Put creates or replaces the schedule d defines, through the API (source
// store.ScheduleSourceAPI), and reports whether it created it;
// store.ErrScheduleConfigured when the configuration owns its name. See
// put.
func (s *Scheduler) Put(ctx context.Context, d Definition) (sc *store.Schedule, created bool, err error) {
	return s.put(ctx, d, store.ScheduleSourceAPI)
}

// ApplyConfig puts the schedules of the configuration (jobd serve
// --schedules), source store.ScheduleSourceConfig, which replaces
// whatever the API made of their names: the configuration wins, at every
// start of a node that carries it. Schedules it does not name are left
// as they are.
func (s *Scheduler) ApplyConfig(ctx context.Context, defs []Definition) error {
	for _, d := range defs {
		if _, _, err := s.put(ctx, d, store.ScheduleSourceConfig); err != nil {
			return fmt.Errorf("schedule %q: %w", d.Name, err)
		}
	}
	return nil
}

// put checks d and stores it with source. A schedule whose spec and zone
// stay as they were keeps its next run, so that replacing its template
// (or restarting a node, for the configuration's) neither skips nor
// repeats a tick; a new or changed spec starts at its first tick after
// now. A paused schedule stays paused.
func (s *Scheduler) put(ctx context.Context, d Definition, source string) (*store.Schedule, bool, error) {
	spec, err := d.Check(s.cfg.MaxArgsBytes)
	if err != nil {
		return nil, false, err
	}
	template, err := d.template()
	if err != nil {
		return nil, false, err
	}
	next := spec.First(s.clock.Now())
	cur, err := s.store.ScheduleGet(ctx, d.Name)
	created := errors.Is(err, job.ErrNotFound)
	switch {
	case err == nil && cur.Cron == d.Cron && cur.Timezone == d.Timezone:
		next = cur.NextRunAt
	case err != nil && !created:
		return nil, false, err
	}
	sc, err := s.store.SchedulePut(ctx, store.Schedule{
		Name: d.Name, Cron: d.Cron, Timezone: d.Timezone, Template: template,
		Overlap: d.Overlap, CatchUp: d.CatchUp, CatchUpLimit: d.CatchUpLimit,
		Source: source, NextRunAt: next,
	})
	if err != nil {
		return nil, false, err
	}
	return sc, created, nil
}

// Pause stops a schedule's ticks until Resume; a trigger still runs.
func (s *Scheduler) Pause(ctx context.Context, name string) (*store.Schedule, error) {
	return s.store.ScheduleSetPaused(ctx, name, true, time.Time{})
}

// Resume starts a paused schedule again at its first tick after now: the
// ticks that fell while it was paused do not run, whatever its catch-up
// rule.
func (s *Scheduler) Resume(ctx context.Context, name string) (*store.Schedule, error) {
	cur, err := s.store.ScheduleGet(ctx, name)
	if err != nil {
		return nil, err
	}
	spec, err := Parse(cur.Cron, cur.Timezone)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", name, err)
	}
	next := cur.NextRunAt
	if now := s.clock.Now(); cur.Paused && !next.After(now) {
		next = spec.After(next, now)
	}
	return s.store.ScheduleSetPaused(ctx, name, false, next)
}

// Trigger inserts one job of the schedule now (scheduled_for now), paused
// or not, and records it as the schedule's last job. key, the caller's
// Idempotency-Key, makes a repeated trigger answer the job of the first
// (Created false), even when the schedule's template changed in between:
// a trigger's request is the schedule's name and the key, nothing else.
// Without a key every trigger inserts a job. A template that names what
// only jobd inserts (an older jobd may have stored one) is refused, a
// *job.ValidationError naming its field.
func (s *Scheduler) Trigger(ctx context.Context, name, key string) (store.InsertResult, error) {
	if key == "" {
		key = uuid.NewString()
	}
	var res store.InsertResult
	err := s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		cur, err := ex.ScheduleLock(ctx, name)
		if err != nil {
			return err
		}
		// The lock orders the triggers of the schedule: a repeat reads the
		// job of the first once it committed.
		if j, err := triggered(ctx, ex, TriggerKey(name, key)); err != nil || j != nil {
			res = store.InsertResult{Job: j}
			return err
		}
		d, err := DefinitionOf(cur)
		if err != nil {
			return err
		}
		if err := d.Job.CheckCaller(); err != nil {
			return err
		}
		now := s.clock.Now()
		p := d.Job.params(name, now, TriggerKey(name, key))
		p.RunAt = time.Time{}
		got, err := ex.JobInsertMany(ctx, []job.InsertParams{p})
		if err != nil {
			return err
		}
		res = got[0]
		if !res.Created {
			return nil
		}
		_, err = ex.ScheduleAdvance(ctx, store.ScheduleAdvance{Name: name, LastJobID: res.Job.ID, LastRunAt: now})
		return err
	})
	if err != nil {
		return store.InsertResult{}, fmt.Errorf("trigger schedule %q: %w", name, err)
	}
	if res.Created {
		s.log.Info("schedule: triggered", "schedule", name, "job_id", res.Job.ID)
	}
	return res, nil
}

// triggered returns the job of the trigger key, if one is retained.
func triggered(ctx context.Context, ex store.Executor, key string) (*job.Job, error) {
	found, err := ex.JobList(ctx, store.ListParams{IdempotencyKey: key, Limit: 1, NoTotal: true})
	if err != nil || len(found.Jobs) == 0 {
		return nil, err
	}
	return found.Jobs[0], nil
}
