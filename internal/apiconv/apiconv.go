// Package apiconv shows jobd's domain types on the wire (package api):
// the one conversion the HTTP API and the webhook callbacks share, so
// that a callback carries a job exactly as GET /api/v1/jobs/{id} shows it.
package apiconv

import (
	"encoding/json"
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
		ParentID:        parentOf(j),
		ChildKey:        j.ChildKey,
	}
}

// parentOf is the job's parent, nil for none.
func parentOf(j *job.Job) *uuid.UUID {
	if j.ParentID == uuid.Nil {
		return nil
	}
	id := j.ParentID
	return &id
}

// Steps shows a job's steps on the wire, with their timings.
func Steps(steps []job.Step) []api.Step {
	if len(steps) == 0 {
		return nil
	}
	out := make([]api.Step, len(steps))
	for i, st := range steps {
		out[i] = Step(st)
	}
	return out
}

// Step shows one step on the wire.
func Step(st job.Step) api.Step {
	return api.Step{Name: st.Name, Result: st.Result, Attempt: st.Attempt, StartedAt: st.StartedAt.UTC(),
		FinishedAt: st.FinishedAt.UTC(), DurationSeconds: api.Seconds(st.Duration())}
}

// Resume shows what a claimed job resumes from, as the claimed job's
// steps, children and signal (api.ClaimedJob).
func Resume(r *job.Resume, c *api.ClaimedJob) {
	if r == nil {
		return
	}
	if len(r.Steps) > 0 {
		c.Steps = make(map[string]json.RawMessage, len(r.Steps))
		for name, st := range r.Steps {
			c.Steps[name] = st.Result
		}
	}
	if len(r.Children) > 0 {
		c.Children = make(map[string]api.Child, len(r.Children))
		for key, ch := range r.Children {
			c.Children[key] = api.Child{ID: ch.ID, State: api.State(ch.State), Result: ch.Result, Error: ch.Error}
		}
	}
	if g := r.Signal; g != nil {
		c.Signal = &api.Signal{Name: g.Name, Payload: g.Payload, TimedOut: g.TimedOut}
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
