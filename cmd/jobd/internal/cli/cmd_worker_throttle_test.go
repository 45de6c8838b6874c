package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// TestWorkerExecThrottle: a command says the downstream is overloaded by
// exiting 75 (EX_TEMPFAIL: a throttle of --throttle, 30s by default) or
// by failing after a "jobd-throttle: DURATION" stderr line (that long;
// the last line wins): the job is queued again after the delay, its
// attempt not counted (even its last one), journal "throttled", with the
// command's other stderr lines as its error. A bad line is an ordinary
// stderr line; --throttle 0 makes exit code 75 an ordinary failure; a
// command that succeeds completes its job whatever it printed.
func TestWorkerExecThrottle(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		cases := []struct {
			queue, command string
			flags          []string
			state          job.State
			attempt        int
			delay          time.Duration // of run_at after the start, for a queued job
			errHas, errNot string
		}{
			{queue: "tempfail", command: `echo "rate limited" >&2; exit 75`,
				state: job.StateQueued, delay: 30 * time.Second, errHas: "exit status 75: rate limited"},
			{queue: "custom", command: `exit 75`, flags: []string{"--throttle", "5h"},
				state: job.StateQueued, delay: 5 * time.Hour, errHas: "exit status 75"},
			{queue: "line", command: `echo "jobd-throttle: 1h" >&2; echo "jobd-throttle: 2h" >&2; echo "429 from the API" >&2; exit 1`,
				state: job.StateQueued, delay: 2 * time.Hour, errHas: "exit status 1: 429 from the API", errNot: "jobd-throttle"},
			{queue: "capped", command: `echo "jobd-throttle:999h" >&2; exit 1`,
				state: job.StateQueued, delay: api.MaxThrottle},
			{queue: "badline", command: `echo "jobd-throttle: soon" >&2; exit 2`,
				state: job.StateFailed, attempt: 1, errHas: "exit status 2: jobd-throttle: soon"},
			{queue: "off", command: `echo "overloaded" >&2; exit 75`, flags: []string{"--throttle", "0"},
				state: job.StateFailed, attempt: 1, errHas: "exit status 75: overloaded"},
			{queue: "fine", command: `echo "jobd-throttle: 1h" >&2; echo '"done"'`,
				state: job.StateSucceeded, attempt: 1},
		}
		jobs := make([]*api.Job, len(cases))
		before := time.Now()
		for i, c := range cases {
			jobs[i] = s.submit(t, api.SubmitRequest{Queue: c.queue, Kind: "k", MaxAttempts: 1})
			execWorker(t, s, c.queue, c.command, c.flags...)
		}
		for i, c := range cases {
			got := s.waitFor(t, jobs[i].ID, "to end its attempt", func(j *job.Job) bool {
				return j.State.Final() || (j.State == job.StateQueued && len(journalKinds(t, s, jobs[i])) > 2)
			})
			kinds := journalKinds(t, s, jobs[i])
			if got.State != c.state || got.Attempt != c.attempt || !strings.Contains(got.LastError, c.errHas) ||
				(c.errNot != "" && strings.Contains(got.LastError, c.errNot)) {
				t.Errorf("%s: state %s attempt %d error %q journal %v; want %s, attempt %d, an error with %q",
					c.queue, got.State, got.Attempt, got.LastError, kinds, c.state, c.attempt, c.errHas)
				continue
			}
			if c.state != job.StateQueued {
				continue
			}
			if d := got.RunAt.Sub(before); d < c.delay || d > c.delay+5*time.Minute {
				t.Errorf("%s: run_at %s after the start, want %s", c.queue, d, c.delay)
			}
			if want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventThrottled}; !slices.Equal(kinds, want) {
				t.Errorf("%s: journal %v, want %v", c.queue, kinds, want)
			}
		}
	})
}

func TestThrottleLine(t *testing.T) {
	for line, want := range map[string]time.Duration{
		"jobd-throttle: 30s":     30 * time.Second,
		"  jobd-throttle:1m30s ": 90 * time.Second,
		"jobd-throttle: 48h":     api.MaxThrottle,
		"jobd-throttle: 0s":      0,
		"jobd-throttle: -1s":     0,
		"jobd-throttle: 30":      0,
		"jobd-throttle:":         0,
		"jobd-throttle 30s":      0,
		"throttle: 30s":          0,
		"progress 1/2":           0,
	} {
		d, ok := throttleLine(line)
		if d != want || ok != (want > 0) {
			t.Errorf("throttleLine(%q) = %s, %v; want %s, %v", line, d, ok, want, want > 0)
		}
	}
}
