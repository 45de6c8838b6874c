package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestWorkerCannotWriteAnothersLease: worker B, presenting the lease
// token of a job worker A claimed, is refused progress, checkpoint,
// complete and fail (409 lease-lost) and its heartbeat does not renew that
// lease; nothing is written, and A still finishes the job (issue 10,
// defect 2).
func TestWorkerCannotWriteAnothersLease(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		a := s.registerWorker(t, "worker-a")
		b := s.registerWorker(t, "worker-b")
		cj := a.claim(t, "owned")
		id := cj.ID.String()
		lease := `"lease_token":"` + cj.LeaseToken.String() + `"`
		base := "/api/v1/worker/jobs/" + id
		before, err := st.JobGet(context.Background(), cj.ID)
		if err != nil {
			t.Fatal(err)
		}

		for _, c := range []struct{ route, body string }{
			{"/progress", `{` + lease + `,"phase":"stolen","done":9,"total":9}`},
			{"/checkpoint", `{` + lease + `,"checkpoint":{"stolen":true}}`},
			{"/complete", `{` + lease + `,"result":{"by":"b"}}`},
			{"/fail", `{` + lease + `,"error":"by b","retryable":false}`},
		} {
			p := b.do("POST", base+c.route, c.body).problem(t, 409, "lease_token")
			if p.Type != api.ProblemLeaseLost {
				t.Fatalf("worker-b's %s: problem %s, want %s", c.route, p.Type, api.ProblemLeaseLost)
			}
		}
		var hb api.HeartbeatResponse
		b.do("POST", "/api/v1/worker/heartbeat", `{"status":"active","leases":[{"id":"`+id+`",`+lease+`}]}`).must(t, 200, &hb)
		if len(hb.Leases) != 1 || hb.Leases[0].Held {
			t.Fatalf("worker-b's heartbeat of worker-a's lease: %+v, want not held", hb.Leases)
		}

		after, err := st.JobGet(context.Background(), cj.ID)
		if err != nil {
			t.Fatal(err)
		}
		if after.State != job.StateRunning || after.LeaseToken != cj.LeaseToken || after.Progress.Phase != "" ||
			len(after.Checkpoint) != 0 || len(after.Result) != 0 || after.LastError != "" ||
			!after.UpdatedAt.Equal(before.UpdatedAt) || after.LeaseOwner != before.LeaseOwner ||
			!after.LeaseExpiresAt.Equal(*before.LeaseExpiresAt) {
			t.Fatalf("worker-b's calls wrote to worker-a's job:\nbefore %+v\nafter  %+v", before, after)
		}

		a.do("POST", "/api/v1/worker/heartbeat", `{"status":"active","leases":[{"id":"`+id+`",`+lease+`}]}`).must(t, 200, &hb)
		if len(hb.Leases) != 1 || !hb.Leases[0].Held {
			t.Fatalf("worker-a's heartbeat: %+v, want held", hb.Leases)
		}
		var fin api.FinishResponse
		a.do("POST", base+"/complete", `{`+lease+`,"result":{"by":"a"}}`).must(t, 200, &fin)
		var got api.Job
		s.do("GET", "/api/v1/jobs/"+id, "").must(t, 200, &got)
		var res struct{ By string }
		if fin.State != api.StateSucceeded || json.Unmarshal(got.Result, &res) != nil || res.By != "a" {
			t.Fatalf("worker-a's complete: state %s, job %+v", fin.State, got)
		}
	})
}
