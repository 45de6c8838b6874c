package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// The overlap and catch-up rules of a schedule.
const (
	OverlapAllow = "allow" // a tick runs even while the last job is active (default)
	OverlapSkip  = "skip"  // a tick passes while the last job is queued or running

	CatchUpNone = "none" // after downtime, no job for missed ticks (default)
	CatchUpOne  = "one"  // one job for the missed ticks
	CatchUpAll  = "all"  // one job per missed tick, at most catch_up_limit
)

// ScheduleJob is the job a schedule's ticks insert: the members of a
// submission (SubmitRequest) that a template takes. Only Kind is
// required.
type ScheduleJob struct {
	Queue       string          `json:"queue,omitempty"`
	Kind        string          `json:"kind"`
	Args        json.RawMessage `json:"args,omitempty"`
	Priority    *int            `json:"priority,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	LeaseTTL    Duration        `json:"lease_ttl,omitempty"`
	Timeout     Duration        `json:"timeout,omitempty"`
	// LeaseTTLSeconds and TimeoutSeconds are LeaseTTL and Timeout in
	// seconds, in every answer that has them. A request may send them
	// instead of those, or with them when both say the same (as an
	// answer read back does); nil in a request sends none.
	LeaseTTLSeconds *float64 `json:"lease_ttl_seconds,omitempty"`
	TimeoutSeconds  *float64 `json:"timeout_seconds,omitempty"`
	LockKey         string   `json:"lock_key,omitempty"`
	PartitionKey    string   `json:"partition_key,omitempty"`
	Requires        []string `json:"requires,omitempty"`
	Prefers         []string `json:"prefers,omitempty"`
}

// ScheduleRequest is the body of PUT /api/v1/schedules/{name}, and,
// with its name, one element of jobd serve --schedules.
type ScheduleRequest struct {
	// Cron is a cron spec: five fields, an optional leading seconds
	// field, or @yearly, @monthly, @weekly, @daily, @hourly, @every 30s.
	Cron string `json:"cron"`
	// Timezone is the IANA zone the spec is read in; default UTC.
	Timezone string      `json:"timezone,omitempty"`
	Job      ScheduleJob `json:"job"`
	// Overlap is OverlapAllow (default) or OverlapSkip.
	Overlap string `json:"overlap,omitempty"`
	// CatchUp is CatchUpNone (default), CatchUpOne or CatchUpAll, the
	// latter bounded by CatchUpLimit (default 100).
	CatchUp      string `json:"catch_up,omitempty"`
	CatchUpLimit int    `json:"catch_up_limit,omitempty"`
}

// Schedule is a schedule as the API shows it.
type Schedule struct {
	Name         string      `json:"name"`
	Cron         string      `json:"cron"`
	Timezone     string      `json:"timezone"`
	Job          ScheduleJob `json:"job"`
	Overlap      string      `json:"overlap"`
	CatchUp      string      `json:"catch_up"`
	CatchUpLimit int         `json:"catch_up_limit"`
	Paused       bool        `json:"paused"`
	// Source is "config" for a schedule of the server's --schedules,
	// which the API cannot replace, else "api".
	Source string `json:"source"`
	// NextRunAt is the next tick to run; LastRunAt the last tick (or
	// trigger) that inserted a job, LastJobID that job.
	NextRunAt time.Time  `json:"next_run_at"`
	LastRunAt *time.Time `json:"last_run_at"`
	LastJobID *uuid.UUID `json:"last_job_id"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// ScheduleList is the answer of GET /api/v1/schedules, by name.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
}

// RerunRequest is the optional body of POST /api/v1/jobs/{id}/rerun:
// new args for the job, or none to keep its own.
type RerunRequest struct {
	Args json.RawMessage `json:"args,omitempty"`
}
