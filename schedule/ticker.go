package schedule

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// dueBatch is how many due schedules one read of the ticker takes; a
// pass reads again while a batch comes back full.
const dueBatch = 100

// callTimeout bounds each of the ticker's transactions.
const callTimeout = 30 * time.Second

// errMoved rolls back a pass of a schedule that another pass advanced
// first (the fence of ScheduleAdvance).
var errMoved = errors.New("the schedule moved on under the pass")

// DefinitionOf returns the definition a stored schedule holds.
func DefinitionOf(sc *store.Schedule) (Definition, error) {
	d := Definition{Name: sc.Name, Cron: sc.Cron, Timezone: sc.Timezone, Overlap: sc.Overlap,
		CatchUp: sc.CatchUp, CatchUpLimit: sc.CatchUpLimit}
	if err := json.Unmarshal(sc.Template, &d.Job); err != nil {
		return Definition{}, fmt.Errorf("schedule %q: decode its job template: %w", sc.Name, err)
	}
	return d, nil
}

// Tick runs one pass of the ticker at the clock's now: every schedule
// that is due (not paused, next_run_at reached) advances, each in a
// transaction of its own (see advance), and it returns how many jobs it
// inserted. A schedule that fails is left for the next pass, the others
// go on, and the pass returns the failures (the maintenance runner logs
// them once, until a pass succeeds again).
//
// Run as the leader duty, in a term that began after a hand-over (see
// engine.Term.HandOver), the ticks that fell due while the
// leadership changed hands are on time: see pick.
func (s *Scheduler) Tick(ctx context.Context) (int, error) {
	now := s.clock.Now()
	var w handOver
	if t, ok := engine.TermOf(ctx); ok {
		w.from, w.to, _ = t.HandOver()
	}
	inserted := 0
	var failed []error
	for {
		due, err := s.store.ScheduleDue(ctx, now, dueBatch)
		if err != nil {
			return inserted, fmt.Errorf("read due schedules: %w", err)
		}
		for _, sc := range due {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			n, err := s.advance(cctx, sc, now, w)
			cancel()
			inserted += n
			if err != nil {
				failed = append(failed, fmt.Errorf("schedule %q: %w", sc.Name, err))
			}
		}
		if len(due) < dueBatch || failed != nil || ctx.Err() != nil {
			return inserted, errors.Join(failed...)
		}
	}
}

// advance runs the pass of one due schedule, as read (read), at now, in
// one transaction: it locks the schedule's row; picks the ticks to run
// by its catch-up rule, none when its overlap rule says skip (its last
// job still queued or running); inserts their jobs, each with its tick's
// idempotency key; and moves next_run_at to the first tick after now,
// fenced by the next_run_at read. A schedule that another pass (another
// leader) advanced, paused or deleted meanwhile is left alone. It
// returns the jobs it created.
func (s *Scheduler) advance(ctx context.Context, read store.Schedule, now time.Time, w handOver) (int, error) {
	created := 0
	err := s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		created = 0
		cur, err := ex.ScheduleLock(ctx, read.Name)
		if errors.Is(err, job.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.Paused || !cur.NextRunAt.Equal(read.NextRunAt) || cur.NextRunAt.After(now) {
			return nil
		}
		d, err := DefinitionOf(cur)
		if err != nil {
			return err
		}
		spec, err := Parse(d.Cron, d.Timezone)
		if err != nil {
			return fmt.Errorf("schedule %q: %w", d.Name, err)
		}
		ticks := pick(spec, cur, now, w)
		if err := d.Job.CheckCaller(); len(ticks) > 0 && err != nil {
			// A template an older jobd stored may name what only jobd's
			// own code inserts now: its ticks pass without a job, and the
			// schedule moves on, not failing every pass (nor holding up
			// the schedules due after it).
			s.log.Warn("schedule: tick skipped; its job template names what only jobd inserts; replace the schedule",
				"schedule", d.Name, "tick", ticks[len(ticks)-1], "err", err)
			ticks = nil
		}
		if len(ticks) > 0 && cur.Overlap == OverlapSkip {
			busy, err := previousActive(ctx, ex, cur.LastJobID)
			if err != nil {
				return err
			}
			ticks = ticks[len(ticks)-1:] // at most one job at a time
			if busy {
				s.log.Debug("schedule: tick skipped; the previous job is still active", "schedule", d.Name,
					"tick", ticks[0], "job_id", cur.LastJobID)
				ticks = nil
			}
		}
		a := store.ScheduleAdvance{Name: cur.Name, From: cur.NextRunAt, Next: spec.After(cur.NextRunAt, now)}
		if len(ticks) > 0 {
			params := make([]job.InsertParams, len(ticks))
			for i, tick := range ticks {
				params[i] = d.Job.params(d.Name, tick, TickKey(d.Name, tick))
			}
			res, err := ex.JobInsertMany(ctx, params)
			if err != nil {
				return fmt.Errorf("insert the jobs of schedule %q: %w", d.Name, err)
			}
			for _, r := range res {
				if r.Created {
					created++
				}
			}
			a.LastJobID, a.LastRunAt = res[len(res)-1].Job.ID, ticks[len(ticks)-1]
		}
		if a.Next.IsZero() {
			return fmt.Errorf("schedule %q: no tick comes after %s", d.Name, now)
		}
		ok, err := ex.ScheduleAdvance(ctx, a)
		if err != nil {
			return err
		}
		if !ok {
			return errMoved
		}
		return nil
	})
	if errors.Is(err, errMoved) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if created > 0 {
		s.log.Debug("schedule: ticked", "schedule", read.Name, "jobs", created)
	}
	return created, nil
}

// handOver is the span [from, to) before the ticker's term during which
// its node was in contact with the database and did not lead (see
// engine.Term.HandOver); empty (zero) outside such a term.
type handOver struct{ from, to time.Time }

func (w handOver) holds(t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

// pick returns the ticks of a due schedule to run at now. A tick less
// than Grace late is on time, and so is one that fell due during a
// hand-over (w): the cluster was up, and no node ticked only because the
// leadership was changing hands. Each of those runs, whatever the
// catch-up rule. The rule decides among the other, missed ticks, those
// that fell due while no node was in contact with the database (every
// node down, or the database) or while the leader's own passes failed:
// none of them (CatchUpNone), the latest when no later tick runs
// (CatchUpOne), every one (CatchUpAll). At most the latest
// max(CatchUpLimit, maxOnTime) ticks are looked at.
//
// A pass that comes late (the ticker's period is the schedule's, and a
// pass takes time) thus runs every tick it finds due, not only the
// latest one.
func pick(spec *Spec, sc *store.Schedule, now time.Time, w handOver) []time.Time {
	limit := cmp.Or(sc.CatchUpLimit, DefaultCatchUpLimit)
	due := spec.Due(sc.NextRunAt, now, max(limit, maxOnTime))
	var run, missed []time.Time
	for i, t := range due {
		switch {
		case now.Sub(t) < Grace || w.holds(t):
			run = append(run, t)
		case sc.CatchUp == CatchUpAll && i >= len(due)-limit:
			run = append(run, t)
		default:
			missed = append(missed, t)
		}
	}
	if sc.CatchUp == CatchUpOne && len(run) == 0 && len(missed) > 0 {
		return missed[len(missed)-1:]
	}
	return run
}

// maxOnTime bounds the ticks a pass finds on time: Grace's worth of the
// most frequent spec, one tick a second.
const maxOnTime = int(Grace/time.Second) + 1

// previousActive reports whether the schedule's last job is queued or
// running, read in the pass's transaction.
func previousActive(ctx context.Context, ex store.Executor, id uuid.UUID) (bool, error) {
	if id == uuid.Nil {
		return false, nil
	}
	j, err := ex.JobGet(ctx, id)
	if errors.Is(err, job.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !j.State.Final(), nil
}
