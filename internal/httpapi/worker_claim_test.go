package httpapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// claimFailing is a real store whose claims from one queue fail, on the
// store and inside its transactions.
type claimFailing struct {
	store.Store
	queue string
}

var errClaimFailed = errors.New("claim failed on purpose")

func (s *claimFailing) JobClaim(ctx context.Context, p store.ClaimParams) ([]*job.Job, error) {
	if p.Queue == s.queue {
		return nil, errClaimFailed
	}
	return s.Store.JobClaim(ctx, p)
}

func (s *claimFailing) InTx(ctx context.Context, fn func(ctx context.Context, ex store.Executor) error) error {
	return s.Store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		return fn(ctx, &claimFailingTx{Executor: ex, queue: s.queue})
	})
}

// claimFailingTx is claimFailing's Executor inside a transaction.
type claimFailingTx struct {
	store.Executor
	queue string
}

func (x *claimFailingTx) JobClaim(ctx context.Context, p store.ClaimParams) ([]*job.Job, error) {
	if p.Queue == x.queue {
		return nil, errClaimFailed
	}
	return x.Executor.JobClaim(ctx, p)
}

// TestClaimAcrossQueuesOrphansNothing: a worker claims from two queues
// and the second queue's claim fails; the job the first queue's claim
// took is not left leased to that worker, who was never told of it: it is
// queued, its attempt not counted, and another worker claims it at once
// (issue 10, defect 4).
func TestClaimAcrossQueuesOrphansNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, &claimFailing{Store: st, queue: "second"}, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		first := s.submit(t, `{"kind":"k","queue":"first"}`, 201)
		s.submit(t, `{"kind":"k","queue":"second"}`, 201)

		r := w.do("POST", "/api/v1/worker/claim", `{"queues":["first","second"],"max":2}`)
		if r.status < 500 {
			t.Fatalf("claim with a failing queue: status %d %s, want an error", r.status, r.body)
		}
		j, err := st.JobGet(context.Background(), first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != job.StateQueued || j.Attempt != 0 || j.LeaseOwner != "" {
			t.Fatalf("the first queue's job after the failed claim: state %s attempt %d owner %q; want queued, attempt 0, no owner",
				j.State, j.Attempt, j.LeaseOwner)
		}

		other := newServer(t, st, httpapi.Config{AdminSecret: adminSecret}).registerWorker(t, "w2")
		var got api.ClaimResponse
		other.do("POST", "/api/v1/worker/claim", `{"queues":["first"]}`).must(t, 200, &got)
		if len(got.Jobs) != 1 || got.Jobs[0].ID != first.ID || got.Jobs[0].Attempt != 1 {
			t.Fatalf("another worker's claim: %+v, want job %s at attempt 1", got.Jobs, first.ID)
		}
	})
}
