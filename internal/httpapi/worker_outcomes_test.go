package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// claimN submits n jobs of queue and claims them, over HTTP.
func (w *remoteWorker) claimN(t *testing.T, queue string, n int) []api.ClaimedJob {
	t.Helper()
	for range n {
		w.s.submit(t, `{"kind":"k","queue":"`+queue+`","max_attempts":3}`, 201)
	}
	var got api.ClaimResponse
	w.do("POST", "/api/v1/worker/claim", fmt.Sprintf(`{"queues":[%q],"max":%d}`, queue, n)).must(t, 200, &got)
	if len(got.Jobs) != n {
		t.Fatalf("claimed %d jobs of %q, want %d", len(got.Jobs), queue, n)
	}
	return got.Jobs
}

// item is one outcome of a batch, as JSON.
func item(cj api.ClaimedJob, outcome, members string) string {
	return fmt.Sprintf(`{"id":%q,"lease_token":%q,"outcome":%q%s}`, cj.ID, cj.LeaseToken, outcome, members)
}

// TestOutcomesBatch: POST /api/v1/worker/outcomes applies many outcomes
// and answers each in the request's order with the status its own route
// would give it: 200 with the state (and repeat), 409 lease-lost, 400 or
// 422 naming the item's member; a refused item writes nothing, the
// others are applied.
func TestOutcomesBatch(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		jobs := w.claimN(t, "batch", 7)
		a, b, c, d, e, f, g := jobs[0], jobs[1], jobs[2], jobs[3], jobs[4], jobs[5], jobs[6]
		w.outcome(g, "complete", `,"result":"done before"`).must(t, 200, nil)
		stranger := d
		stranger.LeaseToken = uuid.New()
		items := []string{
			item(a, "complete", `,"result":{"n":1}`),
			item(b, "fail", `,"error":"later","retryable":true,"retry_after":3600`),
			item(c, "release", ``),
			item(stranger, "complete", ``),
			fmt.Sprintf(`{"id":%q,"lease_token":"nope","outcome":"complete"}`, e.ID),
			item(e, "fail", `,"result":1`),
			item(f, "fail", `,"throttle":0`),
			item(g, "complete", ``),
			item(a, "complete", ``),
			fmt.Sprintf(`{"id":%q,"lease_token":%q,"outcome":"complete"}`, uuid.New(), uuid.New()),
			item(f, "finish", ``),
			`{"lease_token":"` + f.LeaseToken.String() + `","outcome":"release"}`,
			item(e, "fail", `,"error":"nul \u0000 here"`),
			item(d, "fail", `,"error":"for good"`),
		}
		var res api.OutcomesResponse
		w.do("POST", "/api/v1/worker/outcomes", `{"outcomes":[`+strings.Join(items, ",")+`]}`).must(t, 200, &res)
		want := []struct {
			status int
			state  api.State
			repeat bool
			field  string
		}{
			{200, api.StateSucceeded, false, ""}, {200, api.StateQueued, false, ""}, {200, api.StateQueued, false, ""},
			{409, "", false, "lease_token"}, {400, "", false, "lease_token"}, {422, "", false, "result"},
			{422, "", false, "throttle"}, {200, api.StateSucceeded, true, ""}, {409, "", false, "lease_token"},
			{409, "", false, "lease_token"}, {422, "", false, "outcome"}, {422, "", false, "id"},
			{422, "", false, "error"}, {200, api.StateFailed, false, ""},
		}
		if len(res.Outcomes) != len(want) {
			t.Fatalf("%d answers for %d outcomes: %+v", len(res.Outcomes), len(want), res)
		}
		for i, wnt := range want {
			got := res.Outcomes[i]
			field := ""
			if got.Problem != nil {
				field = got.Problem.Field
				if got.Problem.Status != got.Status || got.Problem.Type == "" {
					t.Errorf("outcome %d: problem %+v of status %d", i, got.Problem, got.Status)
				}
			}
			if got.Status != wnt.status || got.State != wnt.state || got.Repeat != wnt.repeat || field != wnt.field {
				t.Errorf("outcome %d: %+v (field %q), want %+v", i, got, field, wnt)
			}
		}
		if res.Outcomes[0].ID != a.ID || res.Outcomes[4].ID != e.ID {
			t.Errorf("answers name %s and %s, want %s and %s", res.Outcomes[0].ID, res.Outcomes[4].ID, a.ID, e.ID)
		}
		for _, still := range []api.ClaimedJob{e, f} {
			j, err := st.JobGet(context.Background(), still.ID)
			if err != nil {
				t.Fatal(err)
			}
			if j.State != job.StateRunning || j.LeaseToken != still.LeaseToken || j.LastError != "" {
				t.Errorf("job %s of refused outcomes changed: %+v", still.ID, j)
			}
		}
		var wk api.WorkerList
		s.do("GET", "/api/v1/workers", "").must(t, 200, &wk)
		if len(wk.Workers) != 1 || wk.Workers[0].JobsDone != 2 || wk.Workers[0].JobsFailed != 2 {
			t.Errorf("the worker's counts %+v, want 2 done (g before, a) and 2 failed (b, d)", wk.Workers)
		}
	})
}

// TestOutcomesBatchBounds: an empty list and one over 1000 outcomes are
// 422 naming outcomes; a body that is not an object of outcomes a 400.
func TestOutcomesBatchBounds(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret, MaxBodyBytes: 1 << 22})
		w := s.registerWorker(t, "w1")
		w.do("POST", "/api/v1/worker/outcomes", `{"outcomes":[]}`).problem(t, 422, "outcomes")
		w.do("POST", "/api/v1/worker/outcomes", `{}`).problem(t, 422, "outcomes")
		one := fmt.Sprintf(`{"id":%q,"lease_token":%q,"outcome":"release"}`, uuid.New(), uuid.New())
		w.do("POST", "/api/v1/worker/outcomes", `{"outcomes":[`+strings.Repeat(one+",", 1000)+one+`]}`).problem(t, 422, "outcomes")
		w.do("POST", "/api/v1/worker/outcomes", `{"outcomes":{}}`).problem(t, 400, "outcomes")
		w.do("POST", "/api/v1/worker/outcomes", `{"outcome":[]}`).problem(t, 400, "outcome")
		s.do("POST", "/api/v1/worker/outcomes", `{"outcomes":[`+one+`]}`).problem(t, 403, "") // the admin secret is no worker
	})
}
