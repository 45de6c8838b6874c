package schedule

import (
	"errors"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
)

func mustParse(t *testing.T, expr, tz string) *Spec {
	t.Helper()
	s, err := Parse(expr, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", expr, tz, err)
	}
	return s
}

// ticks lists n ticks of s from its first after from, as UTC RFC 3339.
func ticks(s *Spec, from time.Time, n int) []string {
	var out []string
	t := s.First(from)
	for range n {
		out = append(out, t.UTC().Format(time.RFC3339))
		t = s.After(t, t)
	}
	return out
}

func wantTicks(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
}

func TestParseForms(t *testing.T) {
	from := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	wantTicks(t, "five fields", ticks(mustParse(t, "*/15 * * * *", ""), from, 2), "2026-06-01T10:15:00Z", "2026-06-01T10:30:00Z")
	wantTicks(t, "with seconds", ticks(mustParse(t, "30 0 10 * * *", "UTC"), from, 2), "2026-06-01T10:00:30Z", "2026-06-02T10:00:30Z")
	wantTicks(t, "@hourly", ticks(mustParse(t, "@hourly", "UTC"), from, 2), "2026-06-01T11:00:00Z", "2026-06-01T12:00:00Z")
	wantTicks(t, "@every 30s", ticks(mustParse(t, "@every 30s", "UTC"), from.Add(1500*time.Millisecond), 3),
		"2026-06-01T10:00:31Z", "2026-06-01T10:01:01Z", "2026-06-01T10:01:31Z")
	wantTicks(t, "in a zone", ticks(mustParse(t, "0 9 * * *", "America/New_York"), from, 1), "2026-06-01T13:00:00Z")

	for _, c := range []struct{ expr, tz, field string }{
		{"", "UTC", "cron"},
		{"* * *", "UTC", "cron"},
		{"61 * * * *", "UTC", "cron"},
		{"@every 500ms", "UTC", "cron"},
		{"@every 1500ms", "UTC", "cron"},
		{"CRON_TZ=Asia/Tokyo 0 6 * * *", "UTC", "cron"},
		{"0 0 30 2 *", "UTC", "cron"}, // February 30th never comes
		{"* * * * *", "Mars/Olympus", "timezone"},
		{"* * * * *", "Local", "timezone"},
	} {
		_, err := Parse(c.expr, c.tz)
		var verr *job.ValidationError
		if !errors.As(err, &verr) || verr.Field != c.field {
			t.Errorf("Parse(%q, %q): %v, want a validation error of %s", c.expr, c.tz, err, c.field)
		}
	}
}

// TestDSTSpringForward: in Europe/Berlin, 02:00–03:00 does not exist on
// 2026-03-29; a daily 02:30 does not tick that day (robfig/cron's
// documented behaviour), and an hourly spec goes from 01:00 CET to 03:00
// CEST, one hour of real time later.
func TestDSTSpringForward(t *testing.T) {
	from := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC)
	wantTicks(t, "daily 02:30", ticks(mustParse(t, "30 2 * * *", "Europe/Berlin"), from, 3),
		"2026-03-28T01:30:00Z", // 02:30 CET
		"2026-03-30T00:30:00Z", // 02:30 CEST: the 29th has none
		"2026-03-31T00:30:00Z")
	wantTicks(t, "hourly", ticks(mustParse(t, "0 * * * *", "Europe/Berlin"), time.Date(2026, 3, 28, 23, 30, 0, 0, time.UTC), 4),
		"2026-03-29T00:00:00Z", // 01:00 CET
		"2026-03-29T01:00:00Z", // 03:00 CEST
		"2026-03-29T02:00:00Z",
		"2026-03-29T03:00:00Z")
	// New York springs forward on 2026-03-08.
	wantTicks(t, "New York daily 02:30", ticks(mustParse(t, "30 2 * * *", "America/New_York"), time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), 2),
		"2026-03-09T06:30:00Z", // the 8th has none; 02:30 EDT on the 9th
		"2026-03-10T06:30:00Z")
}

// TestDSTFallBack: on 2026-10-25 Europe/Berlin lives 02:00–03:00 twice; a
// daily 02:30 ticks in both (CEST, then CET), an hourly spec ticks every
// real hour.
func TestDSTFallBack(t *testing.T) {
	from := time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC)
	wantTicks(t, "daily 02:30", ticks(mustParse(t, "30 2 * * *", "Europe/Berlin"), from, 3),
		"2026-10-25T00:30:00Z", // 02:30 CEST
		"2026-10-25T01:30:00Z", // 02:30 CET
		"2026-10-26T01:30:00Z")
	wantTicks(t, "hourly", ticks(mustParse(t, "@hourly", "Europe/Berlin"), time.Date(2026, 10, 24, 23, 30, 0, 0, time.UTC), 4),
		"2026-10-25T00:00:00Z", // 02:00 CEST
		"2026-10-25T01:00:00Z", // 02:00 CET
		"2026-10-25T02:00:00Z", // 03:00 CET
		"2026-10-25T03:00:00Z")
}

// TestDue: the ticks from a schedule's next run up to now, the latest
// limit of them, for @every and for a calendar spec far behind.
func TestDue(t *testing.T) {
	anchor := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	every := mustParse(t, "@every 10s", "UTC")
	if got := every.Due(anchor, anchor.Add(35*time.Second), 10); len(got) != 4 || !got[0].Equal(anchor) || !got[3].Equal(anchor.Add(30*time.Second)) {
		t.Fatalf("@every due: %v", got)
	}
	if got := every.Due(anchor, anchor.Add(35*time.Second), 2); len(got) != 2 || !got[0].Equal(anchor.Add(20*time.Second)) {
		t.Fatalf("@every due, limit 2: %v", got)
	}
	if got := every.Due(anchor, anchor.Add(-time.Second), 10); got != nil {
		t.Fatalf("due before the anchor: %v", got)
	}
	if got := every.After(anchor, anchor.Add(35*time.Second)); !got.Equal(anchor.Add(40 * time.Second)) {
		t.Fatalf("@every after: %v", got)
	}
	secondly := mustParse(t, "* * * * * *", "UTC")
	now := anchor.Add(30 * 24 * time.Hour) // a month of ticks behind
	got := secondly.Due(anchor, now, 3)
	if len(got) != 3 || !got[2].Equal(now) || !got[0].Equal(now.Add(-2*time.Second)) {
		t.Fatalf("secondly due, a month behind, limit 3: %v", got)
	}
	daily := mustParse(t, "0 10 * * *", "UTC")
	got = daily.Due(anchor, anchor.Add(50*time.Hour), 100)
	if len(got) != 3 || !got[0].Equal(anchor) || !got[2].Equal(anchor.Add(48*time.Hour)) {
		t.Fatalf("daily due: %v", got)
	}
}
