package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// counting is a store that counts the calls the Service makes.
type counting struct {
	store.Store
	mu                     sync.Mutex
	claims, finishes, gets int
	finished               int
}

func (c *counting) JobClaim(ctx context.Context, p store.ClaimParams) ([]*job.Job, error) {
	c.mu.Lock()
	c.claims++
	c.mu.Unlock()
	return c.Store.JobClaim(ctx, p)
}

func (c *counting) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	c.mu.Lock()
	c.finishes++
	c.finished += len(outcomes)
	c.mu.Unlock()
	return c.Store.JobFinish(ctx, outcomes)
}

func (c *counting) JobGet(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Store.JobGet(ctx, id)
}

// policy is a fixed engine policy: a queue's backoff is a minute per
// attempt.
type policy struct{}

func (policy) RetryDelay(_ string, attempt int) time.Duration {
	return time.Duration(attempt) * time.Minute
}
func (policy) QueueTimeout(string) time.Duration { return 0 }
func (policy) ClaimPace(string) time.Duration    { return 0 }
func (policy) Subscribe(func(string)) func()     { return func() {} }

// serviceOver returns a Service over a counting store of st, and a
// registered worker.
func serviceOver(t *testing.T, st store.Store) (*remote.Service, *counting, *store.Worker) {
	t.Helper()
	c := &counting{Store: st}
	s, err := remote.New(remote.Config{Store: c, Policy: policy{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	w := store.Worker{ID: "w1", Name: "w1"}
	if err := st.WorkerCreate(context.Background(), w, store.APIKey{ID: "k1", Name: "w1", Prefix: "p1", Hash: []byte("h"), WorkerID: "w1"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.WorkerGet(context.Background(), "w1")
	if err != nil {
		t.Fatal(err)
	}
	return s, c, got
}

// TestClaimAndFinishBatched: a claim of 100 jobs is one store call, and
// so are their 100 outcomes, retryable failures included: the queue's
// backoff is applied by the store, from the lease, without a read of the
// job.
func TestClaimAndFinishBatched(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s, c, w := serviceOver(t, st)
		params := make([]job.InsertParams, 100)
		for i := range params {
			params[i] = job.InsertParams{Queue: "bulk", Kind: "k", MaxAttempts: 3}
		}
		if _, err := st.JobInsertMany(ctx, params); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.Claim(ctx, w, remote.Claim{Queues: []string{"bulk"}, Max: 100})
		if err != nil || len(jobs) != 100 {
			t.Fatalf("claimed %d, %v; want 100", len(jobs), err)
		}
		if c.claims != 1 {
			t.Fatalf("a claim of 100 made %d store claims, want 1", c.claims)
		}
		outcomes := make([]remote.Outcome, len(jobs))
		for i, j := range jobs {
			outcomes[i] = remote.Outcome{Lease: remote.LeaseOf(w, j.ID, j.LeaseToken), Status: store.OutcomeSucceeded, Result: json.RawMessage(`1`)}
			if i%2 == 1 {
				outcomes[i] = remote.Outcome{Lease: outcomes[i].Lease, Status: store.OutcomeFailed,
					Failure: remote.Failure{Error: "again", Retryable: true}}
			}
		}
		answers, err := s.Finish(ctx, w, outcomes)
		if err != nil {
			t.Fatal(err)
		}
		if c.finishes != 1 || c.finished != 100 || c.gets != 0 {
			t.Fatalf("100 outcomes: %d store finishes of %d outcomes and %d reads, want 1 of 100 and none", c.finishes, c.finished, c.gets)
		}
		for i, a := range answers {
			want := job.StateSucceeded
			if i%2 == 1 {
				want = job.StateQueued
			}
			if a.Err != nil || a.State != want {
				t.Fatalf("outcome %d: %+v, want %s", i, a, want)
			}
		}
		j, err := st.JobGet(ctx, jobs[1].ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := j.RunAt.Sub(j.UpdatedAt); d < 59*time.Second || d > time.Minute {
			t.Fatalf("the retry waits %s, want the queue's backoff of its first attempt, 1m", d)
		}
		// Sent again: repeats, in one call, counted once.
		again, err := s.Finish(ctx, w, outcomes[:2])
		if err != nil || !again[0].Repeat || !again[1].Repeat || again[0].Err != nil {
			t.Fatalf("sent again: %+v, %v", again, err)
		}
		rec, _ := st.WorkerGet(ctx, "w1")
		if rec.JobsDone != 50 || rec.JobsFailed != 50 {
			t.Fatalf("worker counts %d done, %d failed; want 50 and 50", rec.JobsDone, rec.JobsFailed)
		}
	})
}

// TestFinishRefusesAlone: an outcome out of the rules is refused alone,
// naming its member; the others of the call are applied.
func TestFinishRefusesAlone(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s, _, w := serviceOver(t, st)
		if _, err := st.JobInsertMany(ctx, []job.InsertParams{{Queue: "q", Kind: "k"}, {Queue: "q", Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
		jobs, err := s.Claim(ctx, w, remote.Claim{Queues: []string{"q"}, Max: 2})
		if err != nil || len(jobs) != 2 {
			t.Fatalf("claimed %d, %v", len(jobs), err)
		}
		zero, negative := time.Duration(0), -time.Second
		answers, err := s.Finish(ctx, w, []remote.Outcome{
			{Lease: remote.LeaseOf(w, jobs[0].ID, jobs[0].LeaseToken), Status: store.OutcomeFailed, Failure: remote.Failure{Throttle: &zero}},
			{Lease: remote.LeaseOf(w, jobs[0].ID, jobs[0].LeaseToken), Status: store.OutcomeFailed, Failure: remote.Failure{RetryAfter: &negative}},
			{Lease: remote.LeaseOf(w, jobs[0].ID, jobs[0].LeaseToken), Status: store.OutcomeSucceeded, Result: json.RawMessage(`"\u0000"`)},
			{Lease: remote.LeaseOf(w, jobs[1].ID, jobs[1].LeaseToken), Status: store.OutcomeSucceeded},
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, field := range []string{"throttle", "retry_after", "result"} {
			var ve *job.ValidationError
			if !errors.As(answers[i].Err, &ve) || ve.Field != field {
				t.Errorf("outcome %d: %v, want a refusal naming %s", i, answers[i].Err, field)
			}
		}
		if answers[3].Err != nil || answers[3].State != job.StateSucceeded {
			t.Errorf("the good outcome: %+v", answers[3])
		}
		if j, _ := st.JobGet(ctx, jobs[0].ID); j.State != job.StateRunning {
			t.Errorf("the refused job is %s, want still running", j.State)
		}
	})
}

// wakingPolicy is policy whose wake-ups the test sends.
type wakingPolicy struct {
	policy
	mu  sync.Mutex
	fns []func(string)
}

func (p *wakingPolicy) Subscribe(fn func(string)) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fns = append(p.fns, fn)
	return func() {}
}

func (p *wakingPolicy) wake(queue string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, fn := range p.fns {
		fn(queue)
	}
}

// TestClaimCursorWoken: a worker draining a backlog claims on after its
// last claim; a job inserted ahead of it (a better priority) is the next
// claim's first once a wake-up says a job came.
func TestClaimCursorWoken(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		p := &wakingPolicy{}
		s, err := remote.New(remote.Config{Store: st, Policy: p, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		_, _, w := serviceOver(t, st)
		params := make([]job.InsertParams, 6)
		for i := range params {
			params[i] = job.InsertParams{Queue: "drain", Kind: "k"}
		}
		if _, err := st.JobInsertMany(ctx, params); err != nil {
			t.Fatal(err)
		}
		claim := func() []*job.Job {
			jobs, err := s.Claim(ctx, w, remote.Claim{Queues: []string{"drain"}, Max: 2})
			if err != nil {
				t.Fatal(err)
			}
			return jobs
		}
		if got := claim(); len(got) != 2 {
			t.Fatalf("claimed %d", len(got))
		}
		urgent, err := st.JobInsertMany(ctx, []job.InsertParams{{Queue: "drain", Kind: "k", Priority: prio(0)}})
		if err != nil {
			t.Fatal(err)
		}
		p.wake("drain")
		got := claim()
		if len(got) != 2 || got[0].ID != urgent[0].Job.ID {
			t.Fatalf("after the wake-up the claim took %v first, want the urgent job %s", got[0].ID, urgent[0].Job.ID)
		}
	})
}

func prio(n int) *int { return &n }
