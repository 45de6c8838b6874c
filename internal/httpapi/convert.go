package httpapi

import (
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/apiconv"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// toAPIJob shows a job on the wire; the lease token stays out.
func toAPIJob(j *job.Job) api.Job { return apiconv.Job(j) }

func toAPIProgress(p job.Progress) api.Progress { return apiconv.Progress(p) }

func toAPIEvent(e job.Event) api.Event {
	return api.Event{ID: e.ID, JobID: e.JobID, At: e.At.UTC(), Kind: string(e.Kind), Attempt: e.Attempt, Detail: e.Detail}
}

func toAPIQueue(q store.QueueInfo) api.Queue {
	counts := make(map[api.State]int64, len(job.States))
	for _, st := range job.States {
		counts[api.State(st)] = q.Counts[st]
	}
	out := api.Queue{Name: q.Name, Paused: q.Paused, Counts: counts, QueueLimits: toAPILimits(q.Limits),
		ThrottledUntil: utc(q.ThrottledUntil), ThrottledPartitions: make([]api.PartitionThrottle, 0, len(q.Throttled))}
	for _, p := range q.Throttled {
		out.ThrottledPartitions = append(out.ThrottledPartitions, api.PartitionThrottle{PartitionKey: p.PartitionKey, Until: p.Until.UTC()})
	}
	return out
}

func toAPILimits(l flow.Limits) api.QueueLimits {
	out := api.QueueLimits{GlobalLimit: l.GlobalLimit, PartitionLimit: l.PartitionLimit, ThrottleBy: l.ThrottleBy}
	if r := l.Rate; r != nil {
		secs := api.Seconds(r.Period)
		out.Rate = &api.QueueRate{Limit: r.Limit, Period: api.Duration(r.Period), PeriodSeconds: &secs, By: r.By, Burst: r.Burst}
	}
	return out
}

func toAPIKey(k store.APIKey) api.Key {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return api.Key{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scopes: scopes, Queues: orEmpty(k.Queues), CreatedAt: k.CreatedAt.UTC()}
}

func utc(t *time.Time) *time.Time { return apiconv.UTC(t) }

func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// toAPIInputs shows a claimed task's inputs; nil for none.
func toAPIInputs(in map[string]job.Input) map[string]api.Input { return apiconv.Inputs(in) }
