// Package apiconv shows jobd's domain types on the wire (package api):
// the one conversion the HTTP API and the webhook callbacks share, so
// that a callback carries a job exactly as GET /api/v1/jobs/{id} shows it.
package apiconv

import (
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// Job shows a job on the wire; the lease token stays out.
func Job(j *job.Job) api.Job {
	return api.Job{
		ID:              j.ID,
		Queue:           j.Queue,
		Kind:            j.Kind,
		Args:            j.Args,
		State:           api.State(j.State),
		Priority:        j.Priority,
		Attempt:         j.Attempt,
		MaxAttempts:     j.MaxAttempts,
		LeaseTTL:        api.Duration(j.LeaseTTL),
		LeaseTTLSeconds: api.Seconds(j.LeaseTTL),
		RunAt:           j.RunAt.UTC(),
		LockKey:         j.LockKey,
		PartitionKey:    j.PartitionKey,
		IdempotencyKey:  j.IdempotencyKey,
		Requires:        orEmpty(j.Requires),
		Prefers:         orEmpty(j.Prefers),
		Progress:        Progress(j.Progress),
		Checkpoint:      j.Checkpoint,
		Result:          j.Result,
		Error:           errorOf(j),
		LastError:       j.LastError,
		CancelRequested: j.CancelRequested,
		LeaseOwner:      j.LeaseOwner,
		LeaseExpiresAt:  UTC(j.LeaseExpiresAt),
		HeartbeatAt:     UTC(j.HeartbeatAt),
		CreatedAt:       j.CreatedAt.UTC(),
		StartedAt:       UTC(j.StartedAt),
		FinishedAt:      UTC(j.FinishedAt),
		UpdatedAt:       j.UpdatedAt.UTC(),
		TraceParent:     j.TraceParent,
		Schedule:        j.Schedule,
		ScheduledFor:    UTC(j.ScheduledFor),
		Timeout:         durationOrNull(j.Timeout),
		TimeoutSeconds:  api.SecondsOrNull(durationOrNull(j.Timeout)),
		Deadline:        UTC(j.Deadline),
		Rerun:           j.Rerun,
		PreviousState:   api.State(j.PreviousState),
		PreviousResult:  j.PreviousResult,
		CallbackURL:     j.CallbackURL,
		WorkflowID:      workflowID(j),
		Ref:             j.Ref,
	}
}

// workflowID is the job's workflow, nil outside workflows.
func workflowID(j *job.Job) *uuid.UUID {
	if j.WorkflowID == uuid.Nil {
		return nil
	}
	id := j.WorkflowID
	return &id
}

// Inputs shows a claimed task's inputs on the wire; nil for none.
func Inputs(in map[string]job.Input) map[string]api.Input {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]api.Input, len(in))
	for ref, v := range in {
		out[ref] = api.Input{State: api.State(v.State), Result: v.Result, Error: v.Error}
	}
	return out
}

// errorOf is the job's error as the API shows it (api.Job.Error): its
// last error, unless it succeeded.
func errorOf(j *job.Job) string {
	if j.State == job.StateSucceeded {
		return ""
	}
	return j.LastError
}

// durationOrNull shows a duration, or null for none.
func durationOrNull(d time.Duration) *api.Duration {
	if d <= 0 {
		return nil
	}
	v := api.Duration(d)
	return &v
}

// Progress shows a job's progress on the wire.
func Progress(p job.Progress) api.Progress {
	return api.Progress{Phase: p.Phase, Done: p.Done, Total: p.Total, Items: p.Items}
}

// UTC returns *t in UTC, nil for nil.
func UTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
