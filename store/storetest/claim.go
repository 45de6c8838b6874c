package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var claimTests = []test{
	{"Order", testClaimOrder},
	{"BestOfMany", testClaimBestOfMany},
	{"FutureRunAt", testClaimFutureRunAt},
	{"Max", testClaimMax},
	{"Fields", testClaimFields},
	{"FreshTokens", testClaimFreshTokens},
	{"PausedQueue", testClaimPausedQueue},
	{"OtherQueues", testClaimOtherQueues},
	{"Concurrent", testClaimConcurrent},
	{"AfterCursor", testClaimAfterCursor},
}

// orderFixture inserts four jobs whose best-first order is the returned
// slice: priority ascending, then run_at, then insertion order.
func orderFixture(t *testing.T, e *env) []*job.Job {
	now := e.now()
	late1 := e.insert(t, job.InsertParams{Kind: "late1", Priority: prio(1), RunAt: now})
	urgent := e.insert(t, job.InsertParams{Kind: "urgent", Priority: prio(0), RunAt: now})
	early := e.insert(t, job.InsertParams{Kind: "early", Priority: prio(1), RunAt: now.Add(-time.Minute)})
	late2 := e.insert(t, job.InsertParams{Kind: "late2", Priority: prio(1), RunAt: now})
	return []*job.Job{urgent, early, late1, late2}
}

func testClaimOrder(t *testing.T, e *env) {
	want := orderFixture(t, e)
	for i, w := range want {
		if got := e.claimOne(t, job.DefaultQueue); got.ID != w.ID {
			t.Fatalf("claim %d took %s (%s), want %s (%s)", i, got.ID, got.Kind, w.ID, w.Kind)
		}
	}
	e.claimNone(t, job.DefaultQueue)
}

func testClaimBestOfMany(t *testing.T, e *env) {
	want := orderFixture(t, e)
	got := e.claim(t, job.DefaultQueue, 3)
	if len(got) != 3 {
		t.Fatalf("claimed %d, want 3", len(got))
	}
	best := map[uuid.UUID]bool{want[0].ID: true, want[1].ID: true, want[2].ID: true}
	for _, j := range got {
		if !best[j.ID] {
			t.Fatalf("claimed %s (%s), which is not among the best three", j.ID, j.Kind)
		}
	}
	if last := e.claimOne(t, job.DefaultQueue); last.ID != want[3].ID {
		t.Fatalf("last claim took %s, want %s", last.ID, want[3].ID)
	}
}

func testClaimFutureRunAt(t *testing.T, e *env) {
	j := e.insert(t, job.InsertParams{Kind: "later", RunAt: e.now().Add(30 * time.Second)})
	e.claimNone(t, job.DefaultQueue)
	e.clk.Advance(29 * time.Second)
	e.claimNone(t, job.DefaultQueue)
	e.clk.Advance(2 * time.Second)
	if got := e.claimOne(t, job.DefaultQueue); got.ID != j.ID {
		t.Fatalf("claimed %s, want %s", got.ID, j.ID)
	}
}

// testClaimAfterCursor: a claim with a cursor takes only jobs after it in
// claim order, best first; one without takes the best job again.
func testClaimAfterCursor(t *testing.T, e *env) {
	order := orderFixture(t, e) // urgent, early, late1, late2
	ctx := t.Context()
	got, err := e.s.JobClaim(ctx, store.ClaimParams{Queue: job.DefaultQueue, Max: 2, Owner: "me",
		After: store.CursorOf(order[0])})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != order[1].ID || got[1].ID != order[2].ID {
		t.Fatalf("claim after %s took %v, want early and late1", order[0].Kind, kinds(got))
	}
	got, err = e.s.JobClaim(ctx, store.ClaimParams{Queue: job.DefaultQueue, Max: 5, Owner: "me",
		After: store.CursorOf(order[3])})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("claim after the last job took %v", kinds(got))
	}
	if j := e.claimOne(t, job.DefaultQueue); j.ID != order[0].ID {
		t.Fatalf("claim without a cursor took %s, want urgent", j.Kind)
	}
}

func kinds(js []*job.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.Kind
	}
	return out
}

func testClaimMax(t *testing.T, e *env) {
	e.insertN(t, 5, job.InsertParams{Kind: "k"})
	seen := map[uuid.UUID]bool{}
	for i, want := range []int{3, 2, 0} {
		got := e.claim(t, job.DefaultQueue, 3)
		if len(got) != want {
			t.Fatalf("claim %d: got %d jobs, want %d", i, len(got), want)
		}
		for _, j := range got {
			if seen[j.ID] {
				t.Fatalf("job %s claimed twice", j.ID)
			}
			seen[j.ID] = true
		}
	}
}

func testClaimFields(t *testing.T, e *env) {
	ins := e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: 90 * time.Second})
	e.clk.Advance(5 * time.Second)
	now := e.now()
	c := e.claimOne(t, job.DefaultQueue)
	for _, j := range []*job.Job{c, e.get(t, ins.ID)} {
		wantState(t, j, job.StateRunning)
		if j.ID != ins.ID || j.Attempt != 1 || j.LeaseOwner != owner {
			t.Fatalf("claimed job: id %s attempt %d owner %q; want %s 1 %q", j.ID, j.Attempt, j.LeaseOwner, ins.ID, owner)
		}
		if j.LeaseToken == uuid.Nil || j.LeaseToken != c.LeaseToken {
			t.Fatalf("lease token %s (claim returned %s), want the same non-zero token", j.LeaseToken, c.LeaseToken)
		}
		wantTimePtr(t, "lease_expires_at", j.LeaseExpiresAt, now.Add(90*time.Second))
		wantTimePtr(t, "started_at", j.StartedAt, now)
		wantStamp(t, "updated_at", j.UpdatedAt, now)
		wantNil(t, "finished_at", j.FinishedAt)
	}
	e.wantKinds(t, ins.ID, job.EventQueued, job.EventClaimed)
	wantDetail(t, e.events(t, ins.ID)[1], owner)
}

func testClaimFreshTokens(t *testing.T, e *env) {
	e.insertN(t, 2, job.InsertParams{Kind: "k"})
	got := e.claim(t, job.DefaultQueue, 2)
	if len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	if got[0].LeaseToken == uuid.Nil || got[0].LeaseToken == got[1].LeaseToken {
		t.Fatalf("tokens %s and %s: want two different non-zero tokens", got[0].LeaseToken, got[1].LeaseToken)
	}
	e.finishOne(t, releaseOf(got[0]))
	again := e.claimOne(t, job.DefaultQueue)
	if again.ID != got[0].ID {
		t.Fatalf("reclaimed %s, want the released %s", again.ID, got[0].ID)
	}
	if again.LeaseToken == uuid.Nil || again.LeaseToken == got[0].LeaseToken || again.LeaseToken == got[1].LeaseToken {
		t.Fatalf("reclaim reused a token: %s", again.LeaseToken)
	}
}

func testClaimPausedQueue(t *testing.T, e *env) {
	e.setPaused(t, "slow", true)
	j := e.insert(t, job.InsertParams{Queue: "slow", Kind: "k"})
	e.insert(t, job.InsertParams{Queue: "fast", Kind: "k"})
	e.claimNone(t, "slow")
	e.claimOne(t, "fast")
	e.setPaused(t, "slow", false)
	if got := e.claimOne(t, "slow"); got.ID != j.ID {
		t.Fatalf("claimed %s, want %s", got.ID, j.ID)
	}
	// Pausing a queue that has jobs stops its claims too.
	e.insert(t, job.InsertParams{Queue: "slow", Kind: "k"})
	e.setPaused(t, "slow", true)
	e.claimNone(t, "slow")
}

func testClaimOtherQueues(t *testing.T, e *env) {
	a := e.insert(t, job.InsertParams{Queue: "a", Kind: "k"})
	b := e.insert(t, job.InsertParams{Queue: "b", Kind: "k"})
	got := e.claim(t, "a", 10)
	wantIDs(t, "claim of queue a", got, a)
	wantState(t, e.get(t, b.ID), job.StateQueued)
	e.claimNone(t, "c")
}

func testClaimConcurrent(t *testing.T, e *env) {
	const jobs, claimers = 500, 8
	params := make([]job.InsertParams, jobs)
	for i := range params {
		params[i] = job.InsertParams{Kind: fmt.Sprintf("k%d", i%7)}
	}
	e.insertMany(t, params...)

	var (
		wg      sync.WaitGroup
		startCh = make(chan struct{})
		claimed = make([][]*job.Job, claimers)
		errs    = make([]error, claimers)
	)
	for g := range claimers {
		wg.Go(func() {
			<-startCh
			for {
				got, err := e.s.JobClaim(t.Context(), claimParams(job.DefaultQueue, 7, fmt.Sprintf("claimer-%d", g)))
				if err != nil {
					errs[g] = err
					return
				}
				if len(got) == 0 {
					return
				}
				claimed[g] = append(claimed[g], got...)
			}
		})
	}
	close(startCh)
	wg.Wait()
	seen := map[uuid.UUID]bool{}
	tokens := map[uuid.UUID]bool{}
	add := func(j *job.Job) {
		if seen[j.ID] {
			t.Fatalf("job %s claimed twice", j.ID)
		}
		if tokens[j.LeaseToken] {
			t.Fatalf("token %s issued twice", j.LeaseToken)
		}
		seen[j.ID], tokens[j.LeaseToken] = true, true
	}
	for g := range claimers {
		if errs[g] != nil {
			t.Fatalf("claimer %d: %v", g, errs[g])
		}
		for _, j := range claimed[g] {
			add(j)
		}
	}
	// A claimer may stop while others hold the last rows; sweep what is left.
	for _, j := range e.claim(t, job.DefaultQueue, jobs) {
		add(j)
	}
	if len(seen) != jobs {
		t.Fatalf("%d distinct jobs claimed, want %d", len(seen), jobs)
	}
}
