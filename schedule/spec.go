package schedule

import (
	"strings"
	"time"
	_ "time/tzdata" // IANA zones on any machine, whatever it has installed

	"github.com/robfig/cron/v3"

	"github.com/jobd/jobd/job"
)

// parser reads the cron specs jobd takes: five fields (minute, hour,
// day of month, month, day of week) with an optional leading seconds
// field, and the descriptors (@yearly, @monthly, @weekly, @daily,
// @hourly, @every DURATION).
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a parsed cron spec in its time zone: the ticks of a schedule.
//
// A calendar spec ("0 3 * * *", @daily) ticks at the wall-clock times it
// names in its zone, as github.com/robfig/cron/v3 computes them, DST
// included: a time that a spring-forward transition skips does not tick
// that day (02:30 in Europe/Berlin on the last Sunday of March), and a
// time that a fall-back transition repeats ticks twice, once in each
// offset (02:30 CEST, then 02:30 CET). @every D ticks every D (at least
// 1s, whole seconds), from the schedule's first tick, whatever the zone.
type Spec struct {
	loc   *time.Location
	every time.Duration // @every; zero for a calendar spec
	sched cron.Schedule
}

// Parse reads a cron spec in an IANA time zone ("" is UTC). The errors
// are *job.ValidationError of the field "cron" or "timezone".
func Parse(expr, timezone string) (*Spec, error) {
	if timezone == "" {
		timezone = "UTC"
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil || timezone == "Local" {
		return nil, job.Invalid("timezone", "must be an IANA time zone such as Europe/Berlin, got %q", timezone)
	}
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, job.Invalid("cron", "give the time zone in the timezone field, not in the spec")
	}
	sched, err := parser.Parse(expr)
	if err != nil {
		return nil, job.Invalid("cron", "%v", err)
	}
	s := &Spec{loc: loc, sched: sched}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok {
		d, _ := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(expr, "@every")))
		if d < time.Second || d%time.Second != 0 {
			return nil, job.Invalid("cron", "@every takes a whole number of seconds, at least 1s, got %q", expr)
		}
		s.every = every.Delay
	}
	// A spec that never ticks (February 30th) would never run.
	if s.First(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, job.Invalid("cron", "%q never comes", expr)
	}
	return s, nil
}

// First is the first tick of a schedule that starts at now: the first
// tick after now (for @every D, now + D, to the second).
func (s *Spec) First(now time.Time) time.Time {
	if s.every > 0 {
		return now.UTC().Truncate(time.Second).Add(s.every)
	}
	return s.next(now)
}

// next is the first calendar tick after t, in UTC; zero when none comes
// within five years.
func (s *Spec) next(t time.Time) time.Time {
	n := s.sched.Next(t.In(s.loc))
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// After is the first tick after now of a schedule whose next tick to
// run is anchor (itself a tick): for a calendar spec the first after
// now, for @every the first of anchor + k*D after now.
func (s *Spec) After(anchor, now time.Time) time.Time {
	if s.every <= 0 {
		return s.next(now)
	}
	if now.Before(anchor) {
		return anchor
	}
	return anchor.Add((now.Sub(anchor)/s.every + 1) * s.every)
}

// Due returns the ticks from anchor (the schedule's next tick to run)
// up to now, both included, oldest first: the latest limit of them when
// there are more.
func (s *Spec) Due(anchor, now time.Time, limit int) []time.Time {
	if limit <= 0 || anchor.After(now) {
		return nil
	}
	if s.every > 0 {
		n := int64(now.Sub(anchor) / s.every)
		ticks := make([]time.Time, 0, min(n+1, int64(limit)))
		for k := max(0, n-int64(limit)+1); k <= n; k++ {
			ticks = append(ticks, anchor.Add(time.Duration(k)*s.every))
		}
		return ticks
	}
	// A frequent spec far behind now has many ticks: look back from now
	// through windows that double, until one holds limit ticks, instead
	// of walking every tick since anchor.
	for w := time.Minute; now.Add(-w).After(anchor); w *= 2 {
		if ticks := s.between(now.Add(-w), now, limit); len(ticks) == limit {
			return ticks
		}
	}
	ticks := append([]time.Time{anchor.UTC()}, s.between(anchor, now, limit)...)
	return ticks[max(0, len(ticks)-limit):]
}

// between returns the calendar ticks after from up to now, oldest
// first: the latest limit of them.
func (s *Spec) between(from, now time.Time, limit int) []time.Time {
	var ticks []time.Time
	for t := s.next(from); !t.IsZero() && !t.After(now); t = s.next(t) {
		if len(ticks) == limit {
			ticks = append(ticks[1:], t)
			continue
		}
		ticks = append(ticks, t)
	}
	return ticks
}
