// Package schedule runs periodic jobs: a schedule names a cron spec in a
// time zone and a job template, and each of its ticks inserts one job,
// exactly once however many nodes run and die. The ticker is a leader
// duty of the maintenance runner (Scheduler.Duty): each pass advances
// every due schedule in one transaction of its own, which inserts the
// jobs of the ticks the catch-up rule picks (each with the idempotency
// key "schedule:NAME:TICK", so that even two passes that raced would
// yield one job) and moves next_run_at on, fenced by the next_run_at it
// read. The store keeps the schedules (store.ScheduleStore); the cron
// specs are github.com/robfig/cron/v3's.
package schedule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jobd/jobd/job"
)

// The overlap rules: what a tick does while the schedule's previous job
// is still queued or running.
const (
	// OverlapAllow (the default): insert the tick's job all the same.
	OverlapAllow = "allow"
	// OverlapSkip: insert nothing for the tick (it is passed).
	OverlapSkip = "skip"
)

// The catch-up rules: which of the missed ticks get a job, those that
// fell due while no node could tick (every node down, or the database)
// or while the leader's passes failed. A tick less than Grace late is
// on time, and so is one that fell due while the leadership changed
// hands (the cluster was up: engine.Term.HandOver): each of those
// runs, whatever the rule (see pick).
const (
	// CatchUpNone (the default): no job for missed ticks.
	CatchUpNone = "none"
	// CatchUpOne: one job for all the missed ticks, for the latest, unless
	// a later tick runs.
	CatchUpOne = "one"
	// CatchUpAll: one job per tick due, the latest CatchUpLimit of them.
	CatchUpAll = "all"
)

// Grace is how late a tick may be and still be on time, whatever the
// catch-up rule: a ticker's pass takes time, and so does a new leader
// taking over from a dead one.
const Grace = time.Minute

// DefaultCatchUpLimit bounds CatchUpAll when a schedule sets no limit.
const DefaultCatchUpLimit = 100

// MaxCatchUpLimit bounds a schedule's CatchUpLimit: one pass inserts at
// most this many jobs for it.
const MaxCatchUpLimit = 10000

// Definition is a schedule as an operator writes it: in --schedules, in
// PUT /api/v1/schedules/{name}, or in Go.
type Definition struct {
	Name string `json:"name"`
	// Cron is the spec (see Spec); Timezone its IANA zone, default UTC.
	Cron     string `json:"cron"`
	Timezone string `json:"timezone,omitempty"`
	// Job is the template of the job each tick inserts.
	Job Template `json:"job"`
	// Overlap is OverlapAllow (default) or OverlapSkip.
	Overlap string `json:"overlap,omitempty"`
	// CatchUp is CatchUpNone (default), CatchUpOne or CatchUpAll,
	// bounded by CatchUpLimit (default DefaultCatchUpLimit).
	CatchUp      string `json:"catch_up,omitempty"`
	CatchUpLimit int    `json:"catch_up_limit,omitempty"`
}

// Template is the job a schedule's ticks insert; see job.InsertParams,
// whose rules and defaults apply. Its JSON names are the submission's
// (api.SubmitRequest's), durations written as Go duration strings.
type Template struct {
	Queue        string          `json:"queue,omitempty"`
	Kind         string          `json:"kind"`
	Args         json.RawMessage `json:"args,omitempty"`
	Priority     *int            `json:"priority,omitempty"`
	MaxAttempts  int             `json:"max_attempts,omitempty"`
	LeaseTTL     Duration        `json:"lease_ttl,omitempty"`
	Timeout      Duration        `json:"timeout,omitempty"`
	LockKey      string          `json:"lock_key,omitempty"`
	PartitionKey string          `json:"partition_key,omitempty"`
	Requires     []string        `json:"requires,omitempty"`
	Prefers      []string        `json:"prefers,omitempty"`
}

// Duration is a time.Duration written in JSON as a Go duration string
// ("90s").
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`a duration must be a string such as "90s"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// params is the job of the tick at tick, its idempotency key key.
func (t Template) params(name string, tick time.Time, key string) job.InsertParams {
	return job.InsertParams{
		Queue: t.Queue, Kind: t.Kind, Args: t.Args, Priority: t.Priority, MaxAttempts: t.MaxAttempts,
		LeaseTTL: time.Duration(t.LeaseTTL), Timeout: time.Duration(t.Timeout),
		LockKey: t.LockKey, PartitionKey: t.PartitionKey, Requires: t.Requires, Prefers: t.Prefers,
		IdempotencyKey: key, Schedule: name, ScheduledFor: tick, RunAt: tick,
	}
}

// TickKey is the idempotency key of the job of a schedule's tick.
func TickKey(name string, tick time.Time) string {
	return "schedule:" + name + ":" + tick.UTC().Format(time.RFC3339)
}

// TriggerKey is the idempotency key of a trigger's job: key, the
// caller's Idempotency-Key, or a fresh one.
func TriggerKey(name, key string) string {
	return "schedule:" + name + ":trigger:" + key
}

// Check validates d, fills its defaults in place and returns its spec.
// maxArgs bounds the template's args (<= 0: job.DefaultMaxArgsBytes).
// Errors are *job.ValidationError naming the field ("job.args" for a
// member of the template).
func (d *Definition) Check(maxArgs int) (*Spec, error) {
	if d.Name == "" {
		return nil, job.Invalid("name", "is required")
	}
	if err := job.CheckName("name", d.Name); err != nil {
		return nil, err
	}
	if d.Timezone == "" {
		d.Timezone = "UTC"
	}
	spec, err := Parse(d.Cron, d.Timezone)
	if err != nil {
		return nil, err
	}
	switch d.Overlap {
	case "":
		d.Overlap = OverlapAllow
	case OverlapAllow, OverlapSkip:
	default:
		return nil, job.Invalid("overlap", "must be %q or %q, got %q", OverlapAllow, OverlapSkip, d.Overlap)
	}
	switch d.CatchUp {
	case "":
		d.CatchUp = CatchUpNone
	case CatchUpNone, CatchUpOne, CatchUpAll:
	default:
		return nil, job.Invalid("catch_up", "must be %q, %q or %q, got %q", CatchUpNone, CatchUpOne, CatchUpAll, d.CatchUp)
	}
	switch {
	case d.CatchUpLimit == 0:
		d.CatchUpLimit = DefaultCatchUpLimit
	case d.CatchUpLimit < 1 || d.CatchUpLimit > MaxCatchUpLimit:
		return nil, job.Invalid("catch_up_limit", "must be between 1 and %d, got %d", MaxCatchUpLimit, d.CatchUpLimit)
	}
	if bytes.Equal(bytes.TrimSpace(d.Job.Args), []byte("null")) {
		d.Job.Args = nil
	}
	// The template is a caller's: none of jobd's own names. It must make
	// a valid job: check one as the store would.
	if err := d.Job.CheckCaller(); err != nil {
		return nil, err
	}
	p := d.Job.params(d.Name, time.Unix(0, 0), TriggerKey(d.Name, "00000000-0000-0000-0000-000000000000"))
	if _, err := p.Normalize(maxArgs); err != nil {
		return nil, templateError(err)
	}
	return spec, nil
}

// CheckCaller refuses a template that names what only jobd's own code
// inserts (job.CheckCallerInsert: a reserved queue or kind, a lock key
// under a reserved prefix), naming the template's field ("job.queue").
// Every definition is checked so (Check), and the ticker and a trigger
// check a stored template again, which an older jobd may have stored.
func (t Template) CheckCaller() error {
	p := t.params("", time.Time{}, "")
	return templateError(job.CheckCallerInsert(&p))
}

// templateError names the template's field in a validation error of its
// job ("job.args").
func templateError(err error) error {
	var verr *job.ValidationError
	if errors.As(err, &verr) {
		return job.Invalid("job."+verr.Field, "%s", verr.Reason)
	}
	return err
}

// template is d's job template as the store keeps it.
func (d *Definition) template() (json.RawMessage, error) {
	raw, err := json.Marshal(d.Job)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: encode the job template: %w", d.Name, err)
	}
	return raw, nil
}

// ParseConfig reads the schedules of jobd serve --schedules
// (JOBD_SCHEDULES): a JSON array of definitions, each checked (see
// Check); unknown members and a name given twice are refused. Errors are
// *job.ValidationError naming the field ("schedules[2].cron").
func ParseConfig(data []byte, maxArgs int) ([]Definition, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, job.Invalid("schedules", "must be a JSON array of schedule objects: %v", err)
	}
	defs := make([]Definition, len(raws))
	seen := make(map[string]bool, len(raws))
	for i, raw := range raws {
		field := func(name string) string { return fmt.Sprintf("schedules[%d].%s", i, name) }
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&defs[i]); err != nil {
			return nil, job.Invalid(fmt.Sprintf("schedules[%d]", i), "%v", err)
		}
		if _, err := defs[i].Check(maxArgs); err != nil {
			var verr *job.ValidationError
			if errors.As(err, &verr) {
				return nil, job.Invalid(field(verr.Field), "%s", verr.Reason)
			}
			return nil, err
		}
		if seen[defs[i].Name] {
			return nil, job.Invalid(field("name"), "%q is listed twice", defs[i].Name)
		}
		seen[defs[i].Name] = true
	}
	return defs, nil
}
