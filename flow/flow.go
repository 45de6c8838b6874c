// Package flow holds a queue's flow-control settings: how many of its jobs
// may run at once across every node (GlobalLimit), how many per
// partition_key (PartitionLimit), how fast they may start (Rate), and
// whether a throttle reported by a handler stops the whole queue or only
// the job's partition (ThrottleBy). The database enforces them at the
// claim; this package only describes and checks them, and holds the rate
// arithmetic both stores share (Allowance).
package flow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jobd/jobd/job"
)

// ByPartitionKey is the only value of Rate.By and Limits.ThrottleBy besides
// "" (the whole queue).
const ByPartitionKey = "partition_key"

// MaxLimit bounds GlobalLimit, PartitionLimit, Rate.Limit and Rate.Burst.
const MaxLimit = 1_000_000

// MinPeriod and MaxPeriod bound Rate.Period.
const (
	MinPeriod = time.Millisecond
	MaxPeriod = 7 * 24 * time.Hour
)

// Limits is a queue's flow control. The zero value limits nothing, and a
// queue with zero Limits claims by the unlimited path, which costs nothing
// extra (Limited).
type Limits struct {
	// GlobalLimit caps the queue's running jobs across every node and
	// remote worker together; 0 for no cap.
	GlobalLimit int `json:"global_limit,omitempty"`
	// PartitionLimit caps the running jobs of each partition_key of the
	// queue (jobs without one are one partition, ""); 0 for no cap.
	PartitionLimit int `json:"partition_limit,omitempty"`
	// Rate caps how fast the queue's jobs start; nil for no cap.
	Rate *Rate `json:"rate,omitempty"`
	// ThrottleBy is what a throttle reported by one of the queue's jobs
	// stops: "" the whole queue, ByPartitionKey only the job's partition.
	ThrottleBy string `json:"throttle_by,omitempty"`
}

// Rate is at most Limit job starts per Period, spread evenly over it (one
// start every Period/Limit) unless Burst allows that many starts at once
// after a quiet spell. By ByPartitionKey gives each partition_key its own
// allowance. Period is a whole number of microseconds (what the stores
// keep), and Burst at most Limit, so that Bursts * Interval never exceeds
// Period.
type Rate struct {
	Limit  int           `json:"limit"`
	Period time.Duration `json:"-"`
	By     string        `json:"by,omitempty"`
	// Burst is how many starts may happen at once; 0 means 1 (smooth).
	Burst int `json:"burst,omitempty"`
}

// Limited reports whether l limits anything: whether the queue's claims
// must take the limited path (serialized per queue, counting what runs).
func (l Limits) Limited() bool {
	return l.GlobalLimit > 0 || l.PartitionLimit > 0 || l.Rate != nil || l.ThrottleBy == ByPartitionKey
}

// Check reports the first invalid field of l as a *job.ValidationError
// named as in JSON ("rate.period", say).
func (l Limits) Check() error {
	if l.GlobalLimit < 0 || l.GlobalLimit > MaxLimit {
		return job.Invalid("global_limit", "must be between 1 and %d, or absent for none; got %d", MaxLimit, l.GlobalLimit)
	}
	if l.PartitionLimit < 0 || l.PartitionLimit > MaxLimit {
		return job.Invalid("partition_limit", "must be between 1 and %d, or absent for none; got %d", MaxLimit, l.PartitionLimit)
	}
	if l.ThrottleBy != "" && l.ThrottleBy != ByPartitionKey {
		return job.Invalid("throttle_by", "must be %q or absent (the whole queue); got %q", ByPartitionKey, l.ThrottleBy)
	}
	if l.Rate != nil {
		return l.Rate.check()
	}
	return nil
}

func (r Rate) check() error {
	if r.Limit < 1 || r.Limit > MaxLimit {
		return job.Invalid("rate.limit", "must be between 1 and %d; got %d", MaxLimit, r.Limit)
	}
	if r.Period < MinPeriod || r.Period > MaxPeriod {
		return job.Invalid("rate.period", "must be between %s and %s; got %s", MinPeriod, MaxPeriod, r.Period)
	}
	if r.By != "" && r.By != ByPartitionKey {
		return job.Invalid("rate.by", "must be %q or absent (the whole queue); got %q", ByPartitionKey, r.By)
	}
	if r.Period%time.Microsecond != 0 {
		return job.Invalid("rate.period", "must be a whole number of microseconds; got %s", r.Period)
	}
	// A burst of more than a period's starts would make Bursts * Interval
	// exceed Period, up to beyond what a time.Duration holds.
	if r.Burst < 0 || r.Burst > r.Limit {
		return job.Invalid("rate.burst", "must be between 1 and rate.limit (%d), or absent for 1; got %d", r.Limit, r.Burst)
	}
	return nil
}

// Interval is the gap between two starts of a smooth rate: Period/Limit.
func (r Rate) Interval() time.Duration { return r.Period / time.Duration(r.Limit) }

// Bursts is Burst with its default: at least 1.
func (r Rate) Bursts() int { return max(r.Burst, 1) }

type rateJSON struct {
	Limit  int    `json:"limit"`
	Period string `json:"period"`
	By     string `json:"by,omitempty"`
	Burst  int    `json:"burst,omitempty"`
}

// MarshalJSON writes Period as a Go duration string ("1m0s").
func (r Rate) MarshalJSON() ([]byte, error) {
	return json.Marshal(rateJSON{Limit: r.Limit, Period: r.Period.String(), By: r.By, Burst: r.Burst})
}

// UnmarshalJSON reads Period as a Go duration string ("1m", "500ms").
func (r *Rate) UnmarshalJSON(b []byte) error {
	var v rateJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	d, err := time.ParseDuration(v.Period)
	if err != nil {
		return job.Invalid("rate.period", "must be a duration such as \"1m\" or \"500ms\"; got %q", v.Period)
	}
	*r = Rate{Limit: v.Limit, Period: d, By: v.By, Burst: v.Burst}
	return nil
}

// Allowance is the rate arithmetic (GCRA, the generic cell rate
// algorithm) shared by both stores: given the theoretical arrival time
// tat of a rate's next start (zero for never started), how many of want
// starts r allows at now, and the tat after them. Starts are spaced
// Interval apart; up to Bursts of them may happen at once after a quiet
// spell.
//
// A start that comes up to Slack late keeps its place in the schedule:
// the claims that start jobs poll, and each comes a little after the
// moment the rate allows (a claimer's pacing, a busy machine); without a
// tolerance every late claim would push the schedule back, and a rate
// polled by several claimers would run some 10 % below its limit. So over
// any span of time W a rate allows at most (W + Slack)/Interval + Bursts
// starts, and as many as that when its claimers are on time within Slack.
func Allowance(r Rate, tat, now time.Time, want int) (n int, next time.Time) {
	if want <= 0 {
		return 0, tat
	}
	t := r.Interval()
	if floor := now.Add(-r.Slack()); tat.Before(floor) {
		tat = floor
	}
	// A start at tat' = tat + t is allowed while tat' - now <= Bursts * t.
	room := time.Duration(r.Bursts())*t - tat.Sub(now)
	if room < t {
		return 0, tat
	}
	n = min(want, int(room/t))
	return n, tat.Add(time.Duration(n) * t)
}

// MinSlack bounds Rate.Slack below: about how often a claimer of a busy
// rate-limited queue claims again, so that a rate faster than one start
// per claim is reached (a claim then starts up to MinSlack's worth of
// jobs at once).
const MinSlack = 10 * time.Millisecond

// Slack is how late a start may come and keep its place in the rate's
// schedule (Allowance): half an Interval, at least MinSlack, in whole
// microseconds (what the stores keep of a time).
func (r Rate) Slack() time.Duration {
	return max(r.Interval()/2, MinSlack).Truncate(time.Microsecond)
}

// String renders l for logs: "global_limit=5 partition_limit=2 rate=20/1s".
func (l Limits) String() string {
	if !l.Limited() {
		return "unlimited"
	}
	s := ""
	add := func(f string, a ...any) {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf(f, a...)
	}
	if l.GlobalLimit > 0 {
		add("global_limit=%d", l.GlobalLimit)
	}
	if l.PartitionLimit > 0 {
		add("partition_limit=%d", l.PartitionLimit)
	}
	if r := l.Rate; r != nil {
		add("rate=%d/%s", r.Limit, r.Period)
		if r.By != "" {
			add("rate.by=%s", r.By)
		}
		if r.Burst > 1 {
			add("rate.burst=%d", r.Burst)
		}
	}
	if l.ThrottleBy != "" {
		add("throttle_by=%s", l.ThrottleBy)
	}
	return s
}
