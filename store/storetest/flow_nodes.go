package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// flowNodeTests hold the stores to flow control across nodes sharing a
// database: every claim after new limits commit applies them, whatever
// its node knew, and concurrent claims never hand out more than the
// limits.
var flowNodeTests = []test{
	{"StaleNode", testFlowStaleNode},
	{"ThrottleSeenByOtherNode", testFlowThrottleSeenByOtherNode},
	{"Concurrent", testFlowConcurrent},
}

// testFlowStaleNode: node b claims from a queue (and so knows it
// unlimited); node a limits it; b's next claim, at once, gets at most the
// limit, and a second later exactly the room. Lifting the limit is seen
// the same way.
func testFlowStaleNode(t *testing.T, e *env) {
	const q = "shared"
	a, b := e.s, e.otherNode(t)
	e.insertN(t, 10, job.InsertParams{Queue: q, Kind: "k"})
	if n := len(claimFrom(t, b, q, 1)); n != 1 {
		t.Fatalf("node b claimed %d, want 1", n)
	}
	if err := a.QueueSetLimits(t.Context(), q, flow.Limits{GlobalLimit: 3}); err != nil {
		t.Fatal(err)
	}
	first := len(claimFrom(t, b, q, 10))
	if first > 2 {
		t.Fatalf("node b claimed %d at once after the limit of 3 (1 running), want at most 2", first)
	}
	e.clk.Advance(time.Second)
	second := len(claimFrom(t, b, q, 10))
	if first+second != 2 {
		t.Fatalf("node b claimed %d, then %d a second later, want 2 in all", first, second)
	}
	if n := len(claimFrom(t, a, q, 10)); n != 0 {
		t.Fatalf("node a claimed %d from a full queue", n)
	}

	if err := a.QueueSetLimits(t.Context(), q, flow.Limits{}); err != nil {
		t.Fatal(err)
	}
	third := len(claimFrom(t, b, q, 10))
	e.clk.Advance(time.Second)
	if n := third + len(claimFrom(t, b, q, 10)); n != 7 {
		t.Fatalf("node b claimed %d once the limit was lifted, want the other 7", n)
	}
}

// testFlowThrottleSeenByOtherNode: a throttle one node's finish sets stops
// the other node's claims at once.
func testFlowThrottleSeenByOtherNode(t *testing.T, e *env) {
	const q = "throttled-everywhere"
	b := e.otherNode(t)
	e.insertN(t, 3, job.InsertParams{Queue: q, Kind: "k"})
	if n := len(claimFrom(t, b, q, 1)); n != 1 { // b knows the queue
		t.Fatalf("node b claimed %d, want 1", n)
	}
	e.throttle(t, e.claimOne(t, q), time.Minute) // on node a
	if n := len(claimFrom(t, b, q, 10)); n != 0 {
		t.Fatalf("node b claimed %d from a throttled queue", n)
	}
	e.clk.Advance(time.Minute)
	if n := len(claimFrom(t, b, q, 10)); n != 2 {
		t.Fatalf("node b claimed %d once the throttle passed, want 2", n)
	}
}

// testFlowConcurrent: claimers on two nodes claim and finish the jobs of
// one limited queue at once, each claim starting after its claimer's last
// job (as a worker draining a backlog does), or from the best job after
// an empty claim. Half the jobs need one capability, half another, and
// each claimer has one of them: claims that run at once pick different
// jobs, and would each hand out the room they saw were they not
// serialized. Each
// claimer counts the jobs it holds after its claim returns and stops
// counting them before it finishes them, so the count never exceeds what
// runs; it must never exceed the limits, nor must the count of running
// jobs QueueList reads meanwhile. Every job is finished in the end: none
// starves.
func testFlowConcurrent(t *testing.T, e *env) {
	const (
		q            = "contended"
		partitions   = 20
		global       = 5
		perPartition = 2
		claimers     = 3 // per node
	)
	sqlite := strings.Contains(fmt.Sprintf("%T", e.s), "sqlite")
	total := 2000
	if sqlite {
		total = 400 // one writer, serialized claims: the rule, not the contention
	}
	if testing.Short() {
		total /= 4
	}
	e.setLimits(t, q, flow.Limits{GlobalLimit: global, PartitionLimit: perPartition})
	params := make([]job.InsertParams, total)
	for i := range params {
		params[i] = job.InsertParams{Queue: q, Kind: "k", Requires: []string{capability(i % 2)}}
		if k := i % (partitions + 1); k < partitions { // and one partition of jobs without a key
			params[i].PartitionKey = fmt.Sprintf("p%d", k)
		}
	}
	e.insertMany(t, params...)
	nodes := []store.Store{e.s, e.otherNode(t)}
	// SQLite is one node's store (one process, one writer): two stores on
	// one file contend for its lock outside the driver's busy handling,
	// which is not how jobd runs. Its claimers share one store.
	if sqlite {
		nodes = []store.Store{e.s, e.s}
	}

	var (
		mu       sync.Mutex
		running  int
		inPart   = make(map[string]int)
		finished int
		problem  error
		wg       sync.WaitGroup
		// progress is closed, and replaced, whenever jobs finish or the
		// test fails: a claimer whose claim came back empty waits for it
		// rather than claim again at once.
		progress  = make(chan struct{})
		advance   = func() { close(progress); progress = make(chan struct{}) } // under mu
		stopped   = func() bool { mu.Lock(); defer mu.Unlock(); return problem != nil || finished >= total }
		failWith  = func(err error) { mu.Lock(); defer mu.Unlock(); problem = cmpOr(problem, err); advance() }
		nextEvent = func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return progress }
		// waitFor waits for ch, or fails the test when nothing finishes
		// for waitLimit: a deadline for a test that would hang, not a
		// timing assertion.
		waitFor = func(who string, ch <-chan struct{}) bool {
			select {
			case <-ch:
				return true
			case <-time.After(waitLimit):
				failWith(fmt.Errorf("%s: no job finished for %s, and the queue is not drained: a job starves", who, waitLimit))
				return false
			}
		}
		overLimit = func(jobs []*job.Job) error {
			running += len(jobs)
			for _, j := range jobs {
				inPart[j.PartitionKey]++
				if inPart[j.PartitionKey] > perPartition {
					return fmt.Errorf("%d jobs of partition %q running, over the limit of %d", inPart[j.PartitionKey], j.PartitionKey, perPartition)
				}
			}
			if running > global {
				return fmt.Errorf("%d jobs running, over the limit of %d", running, global)
			}
			return nil
		}
	)
	// The database's own count, read while the claimers run: a snapshot
	// never shows more running jobs than the limit.
	wg.Go(func() {
		for !stopped() {
			next := nextEvent()
			qs, err := e.s.QueueList(t.Context())
			if err != nil {
				failWith(fmt.Errorf("QueueList: %w", err))
				return
			}
			if q := findQueue(qs, q); q != nil && q.Counts[job.StateRunning] > global {
				failWith(fmt.Errorf("the database counts %d jobs running, over the limit of %d", q.Counts[job.StateRunning], global))
				return
			}
			<-next // counted again once something changed
		}
	})
	for n, s := range nodes {
		for c := range claimers {
			who := fmt.Sprintf("node%d-claimer%d", n, c)
			wg.Go(func() {
				var after *store.ClaimCursor
				for i := 0; !stopped(); i++ {
					next := nextEvent()
					max := 1 + (i+c)%global
					jobs, err := s.JobClaim(t.Context(), store.ClaimParams{Queue: q, Max: max, Owner: who, After: after,
						Capabilities: []string{capability(c)}})
					if err != nil {
						failWith(fmt.Errorf("%s: JobClaim: %w", who, err))
						return
					}
					if len(jobs) == 0 {
						if after == nil && !waitFor(who, next) {
							return
						}
						after = nil // back to the best job
						continue
					}
					after = store.CursorOf(jobs[len(jobs)-1])
					mu.Lock()
					err = overLimit(jobs)
					mu.Unlock()
					if err != nil {
						failWith(fmt.Errorf("%s: %w", who, err))
						return
					}
					// The work: a round trip while the jobs are counted.
					leases := make([]store.Lease, len(jobs))
					outcomes := make([]store.Outcome, len(jobs))
					for i, j := range jobs {
						leases[i], outcomes[i] = leaseOf(j), outcomeSucceeded(j, `{}`)
					}
					if _, err := s.JobHeartbeat(t.Context(), who, leases); err != nil {
						failWith(fmt.Errorf("%s: JobHeartbeat: %w", who, err))
						return
					}
					mu.Lock()
					running -= len(jobs)
					for _, j := range jobs {
						inPart[j.PartitionKey]--
					}
					mu.Unlock()
					res, err := s.JobFinish(t.Context(), outcomes)
					if err != nil {
						failWith(fmt.Errorf("%s: JobFinish: %w", who, err))
						return
					}
					for _, r := range res {
						if r.Lost || r.State != job.StateSucceeded {
							failWith(fmt.Errorf("%s: finish: %+v", who, r))
							return
						}
					}
					mu.Lock()
					finished += len(jobs)
					advance()
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if problem != nil {
		t.Fatal(problem)
	}
	if finished != total {
		t.Fatalf("finished %d jobs, want %d", finished, total)
	}
	counts := findQueue(e.queues(t), q).Counts
	if counts[job.StateSucceeded] != int64(total) || counts[job.StateQueued] != 0 || counts[job.StateRunning] != 0 {
		t.Fatalf("queue counts %v, want all %d succeeded", counts, total)
	}
}

// capability is the one a job or a claimer of testFlowConcurrent has:
// two kinds of claimers, each of which claims only its kind of job.
func capability(i int) string { return []string{"gpu", "cpu"}[i%2] }

// cmpOr is the first error that is not nil.
func cmpOr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
