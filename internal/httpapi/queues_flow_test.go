package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

// badLimits are bodies of PUT /api/v1/queues/{name} refused with the
// status and field given.
var badLimits = []struct {
	body   string
	status int
	field  string
}{
	{``, 400, ""},
	{`[]`, 400, ""},
	{`{"colour":"red"}`, 400, "colour"},
	{`{"global_limit":"5"}`, 400, "global_limit"},
	{`{"global_limit":1.5}`, 400, "global_limit"},
	{`{"global_limit":-1}`, 422, "global_limit"},
	{`{"global_limit":1000001}`, 422, "global_limit"},
	{`{"partition_limit":-2}`, 422, "partition_limit"},
	{`{"rate":5}`, 400, "rate"},
	{`{"rate":{"limit":"5","period":"1s"}}`, 400, "rate.limit"},
	{`{"rate":{"limit":0,"period":"1s"}}`, 422, "rate.limit"},
	{`{"rate":{"limit":5}}`, 422, "rate.period"},
	{`{"rate":{"limit":5,"period":"soon"}}`, 400, "rate.period"},
	{`{"rate":{"limit":5,"period":"60"}}`, 400, "rate.period"},
	{`{"rate":{"limit":5,"period":"0s"}}`, 422, "rate.period"},
	{`{"rate":{"limit":5,"period":"200h"}}`, 422, "rate.period"},
	{`{"rate":{"limit":5,"period":"1s","by":"tenant"}}`, 422, "rate.by"},
	{`{"rate":{"limit":5,"period":"1s","burst":-1}}`, 422, "rate.burst"},
	{`{"rate":{"limit":5,"period":"1s","burst":6}}`, 422, "rate.burst"},
	{`{"throttle_by":"tenant"}`, 422, "throttle_by"},
	{`{"throttle_by":"a\u0000b"}`, 422, "throttle_by"},
}

// TestQueueLimits: PUT /api/v1/queues/{name} sets a queue's flow control
// as a whole, GET /api/v1/queues shows it, {} clears it; every bad body
// is refused naming its member and writes nothing; a read key may not
// set limits.
func TestQueueLimits(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		s.submit(t, `{"kind":"k","queue":"api"}`, 201)

		var q api.Queue
		s.do("PUT", "/api/v1/queues/api", `{"global_limit":5,"partition_limit":2,
			"rate":{"limit":100,"period":"1m","by":"partition_key","burst":10},"throttle_by":"partition_key"}`).must(t, 200, &q)
		sixty := 60.0
		want := api.QueueLimits{GlobalLimit: 5, PartitionLimit: 2, ThrottleBy: "partition_key",
			Rate: &api.QueueRate{Limit: 100, Period: api.Duration(time.Minute), PeriodSeconds: &sixty, By: "partition_key", Burst: 10}}
		if q.Name != "api" || q.Counts[api.StateQueued] != 1 || !sameLimits(q.QueueLimits, want) ||
			q.ThrottledUntil != nil || q.ThrottledPartitions == nil || len(q.ThrottledPartitions) != 0 {
			t.Errorf("PUT answered %+v", q)
		}
		if got := listed(t, s, "api"); !sameLimits(got.QueueLimits, want) {
			t.Errorf("GET shows %+v, want %+v", got.QueueLimits, want)
		}
		// The wire names, exactly; unset members omitted.
		r := s.do("PUT", "/api/v1/queues/fresh", `{"rate":{"limit":20,"period":"1s"}}`)
		r.must(t, 200, nil)
		for _, part := range []string{`"name":"fresh"`, `"rate":{"limit":20,"period":"1s","period_seconds":1}`, `"throttled_until":null`, `"throttled_partitions":[]`} {
			if !strings.Contains(string(r.body), part) {
				t.Errorf("PUT of a new queue answered %s, without %s", r.body, part)
			}
		}
		if strings.Contains(string(r.body), "global_limit") || strings.Contains(string(r.body), "throttle_by") {
			t.Errorf("unset limits shown: %s", r.body)
		}

		for _, c := range badLimits {
			r := s.do("PUT", "/api/v1/queues/api", c.body)
			if r.status != c.status {
				t.Errorf("%s: status %d, want %d (%s)", c.body, r.status, c.status, r.body)
				continue
			}
			r.problem(t, c.status, c.field)
		}
		s.do("PUT", "/api/v1/queues/%01x", `{}`).problem(t, 400, "name")
		if got := listed(t, s, "api"); !sameLimits(got.QueueLimits, want) {
			t.Errorf("after the refused bodies: %+v, want %+v", got.QueueLimits, want)
		}

		var k api.Key
		s.do("POST", "/api/v1/keys", `{"name":"reader","scopes":["read","submit"]}`).must(t, 201, &k)
		s.do("PUT", "/api/v1/queues/api", `{}`, "Authorization: Bearer "+k.Key).problem(t, 403, "")
		if got := listed(t, s, "api"); !sameLimits(got.QueueLimits, want) {
			t.Errorf("after a read key's PUT: %+v", got.QueueLimits)
		}

		var cleared api.Queue
		s.do("PUT", "/api/v1/queues/api", `{}`).must(t, 200, &cleared)
		if cleared.Name != "api" || cleared.QueueLimits != (api.QueueLimits{}) {
			t.Errorf("{} left %+v", cleared)
		}
		if got := listed(t, s, "api"); got.QueueLimits != (api.QueueLimits{}) {
			t.Errorf("GET after {}: %+v", got.QueueLimits)
		}
	})
}

// TestQueueThrottleShown: after a throttled outcome, GET /api/v1/queues
// shows the queue's throttled_until, or the partition's in
// throttled_partitions when the queue throttles by partition_key.
func TestQueueThrottleShown(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		before := time.Now()
		s.submit(t, `{"kind":"k","queue":"whole"}`, 201)
		throttle(t, st, claim(t, st, "whole"), time.Hour)
		q := listed(t, s, "whole")
		if q.ThrottledUntil == nil || q.ThrottledUntil.Before(before.Add(time.Hour)) || q.ThrottledUntil.After(time.Now().Add(time.Hour)) ||
			len(q.ThrottledPartitions) != 0 || q.Counts[api.StateQueued] != 1 {
			t.Errorf("throttled queue shown %+v", q)
		}

		s.do("PUT", "/api/v1/queues/parts", `{"throttle_by":"partition_key"}`).must(t, 200, nil)
		s.submit(t, `{"kind":"k","queue":"parts","partition_key":"tenant-1"}`, 201)
		throttle(t, st, claim(t, st, "parts"), 30*time.Minute)
		q = listed(t, s, "parts")
		if q.ThrottledUntil != nil || len(q.ThrottledPartitions) != 1 || q.ThrottledPartitions[0].PartitionKey != "tenant-1" ||
			q.ThrottledPartitions[0].Until.Before(before.Add(30*time.Minute)) {
			t.Errorf("throttled partition shown %+v", q)
		}
	})
}

// TestQueueLimitsSurviveRestart: limits set over the API hold for a new
// server over a new connection to the same database.
func TestQueueLimitsSurviveRestart(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			dsn := filepath.Join(t.TempDir(), "jobd.db")
			if driver == "postgres" {
				dsn = migrated.NewDatabase(t)
			}
			first := reopen(t, driver, dsn)
			newServer(t, first, httpapi.Config{}).do("PUT", "/api/v1/queues/api",
				`{"global_limit":3,"rate":{"limit":20,"period":"1s"}}`).must(t, 200, nil)
			first.Close()

			s := newServer(t, reopen(t, driver, dsn), httpapi.Config{})
			one := 1.0
			want := api.QueueLimits{GlobalLimit: 3, Rate: &api.QueueRate{Limit: 20, Period: api.Duration(time.Second), PeriodSeconds: &one}}
			if got := listed(t, s, "api"); !sameLimits(got.QueueLimits, want) {
				t.Errorf("after the restart: %+v, want %+v", got.QueueLimits, want)
			}
		})
	}
}

// TestLongPollPacedOnLimitedQueue: a remote worker long-polls a queue
// whose global_limit another holder fills; when that holder finishes
// (which wakes no one), the waiting claim takes the freed slot by its
// pacing (the engine's ClaimPace, from its view of the queues' settings,
// kept fresh while the claim waits), long before its wait ends.
func TestLongPollPacedOnLimitedQueue(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		counted := &claimCount{Store: st, claimed: make(chan struct{}, 1)}
		eng, err := engine.New(engine.Config{Store: counted, Logger: slog.New(slog.DiscardHandler), Listen: true})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- eng.Run(ctx) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("engine: %v", err)
			}
		})
		workers, err := remote.New(remote.Config{Store: counted, Policy: eng, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		s := newServer(t, counted, httpapi.Config{AdminSecret: adminSecret, Remote: workers})
		w := s.registerWorker(t, "w1")
		s.do("PUT", "/api/v1/queues/narrow", `{"global_limit":1}`).must(t, 200, nil)
		s.submit(t, `{"kind":"k","queue":"narrow"}`, 201)
		held := claim(t, st, "narrow") // fills the limit
		second := s.submit(t, `{"kind":"k","queue":"narrow"}`, 201)

		answer := make(chan *response, 1)
		go func() {
			answer <- w.do("POST", "/api/v1/worker/claim", fmt.Sprintf(`{"queues":["narrow"],"wait":%q}`, remote.MaxClaimWait))
		}()
		// The long-poll claims again and again while the limit is full: it
		// is paced. (Unpaced, it would claim now, on the few wake-ups of
		// the writes above and of the engine's first read of the settings,
		// and at the end of its wait.)
		for counted.n.Load() < 8 {
			select {
			case r := <-answer:
				t.Fatalf("the long-poll answered while the limit was full: %d %s", r.status, r.body)
			case <-counted.claimed:
			}
		}
		finish(t, st, held, store.OutcomeSucceeded, "", "")
		var got api.ClaimResponse
		(<-answer).must(t, 200, &got)
		if len(got.Jobs) != 1 || got.Jobs[0].ID != second.ID {
			t.Fatalf("the long-poll claimed %+v, want the second job", got.Jobs)
		}
	})
}

// claimCount is the real store, counting its claims and telling of each.
type claimCount struct {
	store.Store
	n       atomic.Int64
	claimed chan struct{}
}

func (c *claimCount) JobClaim(ctx context.Context, p store.ClaimParams) ([]*job.Job, error) {
	jobs, err := c.Store.JobClaim(ctx, p)
	c.n.Add(1)
	select {
	case c.claimed <- struct{}{}:
	default:
	}
	return jobs, err
}

// throttle reports a throttled failure of j, for d.
func throttle(t *testing.T, st store.Store, j *job.Job, d time.Duration) {
	t.Helper()
	res, err := st.JobFinish(context.Background(), []store.Outcome{{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "429 Too Many Requests", Throttle: d}}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Lost || res[0].State != job.StateQueued {
		t.Fatalf("throttled job %s: %+v", j.ID, res[0])
	}
}

// listed is queue name as GET /api/v1/queues lists it.
func listed(t *testing.T, s *testServer, name string) api.Queue {
	t.Helper()
	var list api.QueueList
	s.do("GET", "/api/v1/queues", "").must(t, 200, &list)
	for _, q := range list.Queues {
		if q.Name == name {
			return q
		}
	}
	t.Fatalf("queue %s not listed: %+v", name, list.Queues)
	return api.Queue{}
}

func sameLimits(a, b api.QueueLimits) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// reopen opens the store of driver at dsn (a file or a URL), migrated,
// closed when the test ends (Close twice is harmless).
func reopen(t *testing.T, driver, dsn string) store.Store {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	if driver == "sqlite" {
		st, err = sqlite.Open(ctx, dsn, sqlite.Options{})
	} else {
		st, err = postgres.Open(ctx, dsn, postgres.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}
