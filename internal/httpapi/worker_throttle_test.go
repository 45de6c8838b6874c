package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The wire bound of a throttle is the store's.
func TestMaxThrottleIsTheStores(t *testing.T) {
	if api.MaxThrottle != job.MaxThrottle {
		t.Fatalf("api.MaxThrottle %s, job.MaxThrottle %s", api.MaxThrottle, job.MaxThrottle)
	}
}

// TestWorkerFailThrottle: fail's "throttle" requeues the job after it,
// the attempt given back (even with retryable false and no attempt
// left), with the journal entry "throttled"; a value that is neither a
// duration string nor a number of seconds is a 400 naming throttle, one
// not above zero or over 24h a 422 naming it, and a refused call writes
// nothing.
func TestWorkerFailThrottle(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		s.submit(t, `{"kind":"k","queue":"thr","max_attempts":1}`, 201)
		var got api.ClaimResponse
		w.do("POST", "/api/v1/worker/claim", `{"queues":["thr"]}`).must(t, 200, &got)
		if len(got.Jobs) != 1 {
			t.Fatalf("claimed %d jobs, want 1", len(got.Jobs))
		}
		cj := got.Jobs[0]
		base := "/api/v1/worker/jobs/" + cj.ID.String()
		lease := `"lease_token":"` + cj.LeaseToken.String() + `"`

		for _, c := range []struct {
			throttle string
			status   int
		}{
			{`"3x"`, 400}, {`""`, 400}, {`"30"`, 400}, {`{}`, 400}, {`1e300`, 400},
			{`"0s"`, 422}, {`"-1s"`, 422}, {`"24h0m0.001s"`, 422}, {`"999999h"`, 422},
			{`0`, 422}, {`-1`, 422}, {`86400.001`, 422},
		} {
			r := w.do("POST", base+"/fail", `{`+lease+`,"error":"429","throttle":`+c.throttle+`}`)
			if r.status != c.status {
				t.Errorf("throttle %s: status %d, want %d (%s)", c.throttle, r.status, c.status, r.body)
				continue
			}
			r.problem(t, c.status, "throttle")
		}
		j, err := st.JobGet(context.Background(), cj.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != job.StateRunning || j.LeaseToken != cj.LeaseToken || j.LastError != "" {
			t.Fatalf("refused calls wrote to the job: %+v", j)
		}

		before := time.Now()
		var fin api.FinishResponse
		w.do("POST", base+"/fail", `{`+lease+`,"error":"the API answered 429","retryable":false,"throttle":"30s"}`).must(t, 200, &fin)
		after := time.Now()
		if fin.State != api.StateQueued {
			t.Fatalf("throttled job's state %s, want queued", fin.State)
		}
		j, err = st.JobGet(context.Background(), cj.ID)
		if err != nil {
			t.Fatal(err)
		}
		earliest := before.Add(30 * time.Second).Truncate(time.Millisecond)
		latest := after.Add(30*time.Second + time.Millisecond)
		if j.State != job.StateQueued || j.Attempt != 0 || j.LastError != "the API answered 429" ||
			j.RunAt.Before(earliest) || j.RunAt.After(latest) {
			t.Fatalf("throttled job: state %s attempt %d error %q run_at %s, want queued, attempt 0, run_at in [%s, %s]",
				j.State, j.Attempt, j.LastError, j.RunAt, earliest, latest)
		}
		evs, err := st.JobEvents(context.Background(), cj.ID)
		if err != nil {
			t.Fatal(err)
		}
		if last := evs[len(evs)-1]; last.Kind != job.EventThrottled {
			t.Fatalf("last journal entry %q, want %q", last.Kind, job.EventThrottled)
		}
		// Its lease is gone with the throttle: the failure sent again is
		// answered as a repeat, and changes nothing; a success is refused.
		var again api.FinishResponse
		w.do("POST", base+"/fail", `{`+lease+`,"error":"again","throttle":"1s"}`).must(t, 200, &again)
		if !again.Repeat || again.State != api.StateQueued {
			t.Fatalf("the throttle sent again: %+v, want a repeat", again)
		}
		w.do("POST", base+"/complete", `{`+lease+`}`).problem(t, 409, "lease_token")
	})
}

// TestWorkerThrottleStopsPartitionEverywhere (issue 15): a throttle one
// remote worker reports, on a queue that throttles by partition_key,
// stops every claim of that partition, through any node, for its delay,
// while the queue's other partitions are still claimed; once it has
// passed, the partition's jobs are claimed again.
func TestWorkerThrottleStopsPartitionEverywhere(t *testing.T) {
	const delay = time.Second
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		if err := st.QueueSetLimits(ctx, "thr", flow.Limits{ThrottleBy: flow.ByPartitionKey}); err != nil {
			t.Fatal(err)
		}
		one := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		two := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		refuses := one.registerWorker(t, "one")
		other := two.registerWorker(t, "two")
		a1 := one.submit(t, `{"kind":"k","queue":"thr","partition_key":"a"}`, 201)
		a2 := one.submit(t, `{"kind":"k","queue":"thr","partition_key":"a"}`, 201)
		b1 := one.submit(t, `{"kind":"k","queue":"thr","partition_key":"b"}`, 201)

		var got api.ClaimResponse
		refuses.do("POST", "/api/v1/worker/claim", `{"queues":["thr"]}`).must(t, 200, &got)
		if len(got.Jobs) != 1 || got.Jobs[0].ID != a1.ID {
			t.Fatalf("first claim: %d jobs, want a1 alone", len(got.Jobs))
		}
		before := time.Now()
		lease := `"lease_token":"` + got.Jobs[0].LeaseToken.String() + `"`
		refuses.do("POST", "/api/v1/worker/jobs/"+a1.ID.String()+"/fail",
			`{`+lease+`,"error":"429","throttle":"`+delay.String()+`"}`).must(t, 200, nil)

		// Through the other node: partition b only, though a2 is due.
		other.do("POST", "/api/v1/worker/claim", `{"queues":["thr"],"max":10}`).must(t, 200, &got)
		if len(got.Jobs) != 1 || got.Jobs[0].ID != b1.ID {
			t.Fatalf("claim during the throttle: %d jobs, want b1 alone", len(got.Jobs))
		}
		// A long-polling claim gets partition a once the throttle passed,
		// never before. (This server has no wake-ups: the claim runs at
		// the start of its wait and again at its end, after the throttle.)
		other.do("POST", "/api/v1/worker/claim", `{"queues":["thr"],"max":10,"wait":"3s"}`).must(t, 200, &got)
		if len(got.Jobs) != 2 {
			t.Fatalf("the long-polling claim got %d jobs, want a1 and a2 once the throttle passed", len(got.Jobs))
		}
		for _, j := range got.Jobs {
			var at time.Time // the claim's: its lease's start
			if j.LeaseExpiresAt != nil {
				at = j.LeaseExpiresAt.Add(-time.Duration(j.LeaseTTL))
			}
			if (j.ID != a1.ID && j.ID != a2.ID) || at.Before(before.Add(delay)) {
				t.Fatalf("claimed %s (a1 %s, a2 %s) %s after the throttle began; want a1 or a2, claimed %s after it or later",
					j.ID, a1.ID, a2.ID, at.Sub(before), delay)
			}
		}
	})
}
