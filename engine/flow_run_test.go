package engine_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// settingsOf returns the stored limits of queue (zero when it has none).
func settingsOf(t *testing.T, s store.Store, queue string) flow.Limits {
	t.Helper()
	all, err := s.QueueSettings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range all {
		if q.Name == queue {
			return q.Limits
		}
	}
	return flow.Limits{}
}

// TestConfiguredLimitsWrittenAtStart: a node that starts writes the
// limits of each pool that sets any, replacing the stored ones, before
// its first claim; a pool that sets none leaves the stored ones alone.
func TestConfiguredLimitsWrittenAtStart(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		if err := s.QueueSetLimits(ctx, "configured", flow.Limits{GlobalLimit: 1}); err != nil {
			t.Fatal(err)
		}
		stored := flow.Limits{PartitionLimit: 9, ThrottleBy: flow.ByPartitionKey}
		if err := s.QueueSetLimits(ctx, "stored", stored); err != nil {
			t.Fatal(err)
		}
		configured := flow.Limits{GlobalLimit: 3, Rate: &flow.Rate{Limit: 20, Period: time.Second, Burst: 2}}
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: []engine.QueueConfig{
			{Queue: "configured", Concurrency: 1, Limits: configured},
			{Queue: "stored", Concurrency: 1},
		}})
		armed := engine.PollArmedSignal(e)
		armed.Init()
		start(t, e)
		armed.WaitFor(t, "the first claim of the configured queue", func(q string) bool { return q == "configured" })
		if got := settingsOf(t, s, "configured"); !reflect.DeepEqual(got, configured) {
			t.Errorf("configured queue: %s, want %s", got, configured)
		}
		if got := settingsOf(t, s, "stored"); !reflect.DeepEqual(got, stored) {
			t.Errorf("queue without configured limits: %s, want its stored %s", got, stored)
		}
	})
}

// TestRatePacesClaims: a queue limited to 20 starts a second, its pool's
// poll an hour away. Its jobs all run, which only the engine's pacing can
// bring about (each claim takes one job of a smooth rate, and nothing
// wakes the pool for the next); the store's own claim times keep to the
// rate.
func TestRatePacesClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("a timed rate test: it runs without -short")
	}
	eachStore(t, func(t *testing.T, s store.Store) {
		const n = 40
		rate := flow.Rate{Limit: 20, Period: time.Second}
		if err := s.QueueSetLimits(context.Background(), "paced", flow.Limits{Rate: &rate}); err != nil {
			t.Fatal(err)
		}
		params := make([]job.InsertParams, n)
		for i := range params {
			params[i] = job.InsertParams{Kind: "noop", Queue: "paced"}
		}
		res, err := s.JobInsertMany(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, s, newLogs(t), engine.Config{PollInterval: time.Hour,
			Queues: []engine.QueueConfig{{Queue: "paced", Concurrency: 4}}})
		start(t, e)
		var starts []time.Time
		for _, r := range res {
			j := waitState(t, s, r.Job.ID, job.StateSucceeded)
			starts = append(starts, *j.StartedAt)
		}
		slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
		span := starts[n-1].Sub(starts[0])
		// The store spaces the starts of a smooth rate an interval apart,
		// by its clock, which stamps started_at; a start that came late
		// keeps its place (flow.Rate.Slack), so that the next may come
		// up to Slack early: n starts take (n-1) intervals less Slack.
		if least := time.Duration(n-1)*rate.Interval() - rate.Slack(); span < least-time.Millisecond {
			t.Errorf("%d starts over %s; the rate allows them over %s at least", n, span, least)
		}
		t.Logf("%d starts over %s: %.1f a second (rate 20)", n, span, float64(n-1)/span.Seconds())
	})
}

// TestGlobalLimitPacedClaims: another holder fills a queue's global
// limit; the engine's pool (its poll an hour away) claims again by its
// pacing while the limit is full, and takes the freed slot once the
// holder finishes.
func TestGlobalLimitPacedClaims(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		held, next := fillGlobalLimit(t, s)
		e := newEngine(t, s, newLogs(t), engine.Config{PollInterval: time.Hour,
			Queues: []engine.QueueConfig{{Queue: "narrow", Concurrency: 2}}})
		armed := engine.PollArmedSignal(e)
		armed.Init()
		start(t, e)
		// Paced claims while the limit is full (unpaced, the pool would
		// claim at its start and on a wake-up or two, then wait an hour).
		for range 6 {
			armed.WaitFor(t, "a claim of the full queue", func(q string) bool { return q == "narrow" })
		}
		if j, err := s.JobGet(ctx, next.ID); err != nil || j.State != job.StateQueued {
			t.Fatalf("the second job ran past the global limit: %+v, %v", j, err)
		}
		res, err := s.JobFinish(ctx, []store.Outcome{{Lease: store.Lease{ID: held.ID, Token: held.LeaseToken, Owner: "elsewhere"}, Outcome: job.Outcome{Status: store.OutcomeSucceeded}}})
		if err != nil || res[0].Lost {
			t.Fatalf("finish: %+v, %v", res, err)
		}
		waitState(t, s, next.ID, job.StateSucceeded)
	})
}

// TestGlobalLimitFinishWakesPool: another holder (a remote worker, say)
// fills a queue's global limit, and the engine's pool, whose claim came
// back short, waits on a clock that never moves: neither its pacing nor
// its poll ever fires. The holder's finish alone, which wakes the
// queue's claimers on every node, gets the pool to take the freed slot.
func TestGlobalLimitFinishWakesPool(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		held, next := fillGlobalLimit(t, s)
		e := newEngine(t, s, newLogs(t), engine.Config{Clock: clock.NewFake(time.Now()), PollInterval: time.Hour,
			HeartbeatInterval: time.Hour, ReaperInterval: time.Hour,
			Queues: []engine.QueueConfig{{Queue: "narrow", Concurrency: 2}}})
		armed := engine.PollArmedSignal(e)
		armed.Init()
		start(t, e)
		armed.WaitFor(t, "a claim of the full queue", func(q string) bool { return q == "narrow" })
		waitListening(t, e, s)
		if j, err := s.JobGet(ctx, next.ID); err != nil || j.State != job.StateQueued {
			t.Fatalf("the second job ran past the global limit: %+v, %v", j, err)
		}
		res, err := s.JobFinish(ctx, []store.Outcome{{Lease: store.Lease{ID: held.ID, Token: held.LeaseToken, Owner: "elsewhere"}, Outcome: job.Outcome{Status: store.OutcomeSucceeded}}})
		if err != nil || res[0].Lost {
			t.Fatalf("finish: %+v, %v", res, err)
		}
		waitState(t, s, next.ID, job.StateSucceeded)
	})
}

// fillGlobalLimit limits the queue "narrow" to one running job, which
// another holder ("elsewhere") claims, and queues a second: it returns
// the held job and the queued one.
func fillGlobalLimit(t *testing.T, s store.Store) (held *job.Job, next *job.Job) {
	t.Helper()
	ctx := context.Background()
	if err := s.QueueSetLimits(ctx, "narrow", flow.Limits{GlobalLimit: 1}); err != nil {
		t.Fatal(err)
	}
	insert(t, s, job.InsertParams{Kind: "noop", Queue: "narrow"})
	claimed, err := s.JobClaim(ctx, store.ClaimParams{Queue: "narrow", Max: 1, Owner: "elsewhere"})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	return claimed[0], insert(t, s, job.InsertParams{Kind: "noop", Queue: "narrow"})
}
