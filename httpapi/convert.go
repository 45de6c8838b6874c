package httpapi

import (
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// toAPIJob shows a job on the wire; the lease token stays out.
func toAPIJob(j *job.Job) api.Job {
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
		RunAt:           j.RunAt.UTC(),
		LockKey:         j.LockKey,
		PartitionKey:    j.PartitionKey,
		IdempotencyKey:  j.IdempotencyKey,
		Requires:        orEmpty(j.Requires),
		Prefers:         orEmpty(j.Prefers),
		Progress:        toAPIProgress(j.Progress),
		Checkpoint:      j.Checkpoint,
		Result:          j.Result,
		Error:           j.LastError,
		CancelRequested: j.CancelRequested,
		LeaseOwner:      j.LeaseOwner,
		LeaseExpiresAt:  utc(j.LeaseExpiresAt),
		HeartbeatAt:     utc(j.HeartbeatAt),
		CreatedAt:       j.CreatedAt.UTC(),
		StartedAt:       utc(j.StartedAt),
		FinishedAt:      utc(j.FinishedAt),
		UpdatedAt:       j.UpdatedAt.UTC(),
		TraceParent:     j.TraceParent,
		Schedule:        j.Schedule,
		ScheduledFor:    utc(j.ScheduledFor),
		Timeout:         durationOrNull(j.Timeout),
		Deadline:        utc(j.Deadline),
		Rerun:           j.Rerun,
		PreviousState:   api.State(j.PreviousState),
		PreviousResult:  j.PreviousResult,
	}
}

// durationOrNull shows a duration, or null for none.
func durationOrNull(d time.Duration) *api.Duration {
	if d <= 0 {
		return nil
	}
	v := api.Duration(d)
	return &v
}

func toAPIProgress(p job.Progress) api.Progress {
	return api.Progress{Phase: p.Phase, Done: p.Done, Total: p.Total, Items: p.Items}
}

func toAPIEvent(e job.Event) api.Event {
	return api.Event{ID: e.ID, JobID: e.JobID, At: e.At.UTC(), Kind: string(e.Kind), Attempt: e.Attempt, Detail: e.Detail}
}

func toAPIQueue(q store.QueueInfo) api.Queue {
	counts := make(map[api.State]int64, len(job.States))
	for _, st := range job.States {
		counts[api.State(st)] = q.Counts[st]
	}
	return api.Queue{Name: q.Name, Paused: q.Paused, Counts: counts}
}

func toAPIKey(k store.APIKey) api.Key {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return api.Key{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scopes: scopes, CreatedAt: k.CreatedAt.UTC()}
}

func utc(t *time.Time) *time.Time {
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
