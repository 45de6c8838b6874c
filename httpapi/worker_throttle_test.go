package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/httpapi"
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
// left), with the journal entry "throttled"; a value that is not a
// duration is a 400 naming throttle, one not above zero or over 24h a
// 422 naming it, and a refused call writes nothing.
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
			{`"3x"`, 400}, {`""`, 400}, {`30`, 400}, {`{}`, 400},
			{`"0s"`, 422}, {`"-1s"`, 422}, {`"24h0m0.001s"`, 422}, {`"999999h"`, 422},
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
		// Its lease is gone with the throttle.
		w.do("POST", base+"/fail", `{`+lease+`,"error":"again","throttle":"1s"}`).problem(t, 409, "lease_token")
	})
}
