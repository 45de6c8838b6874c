package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// flowWakeTests hold the stores to the wake-up of a queue whose limits
// count its running jobs (a global_limit or a partition_limit) each time
// one of its jobs leaves the running state: the room it makes is what
// the queue's claimers, on every node, wait for. A queue whose limits
// count nothing is not woken by its jobs' ends.
var flowWakeTests = []test{
	{"GlobalLimit", testFlowWakeGlobalLimit},
	{"PartitionLimit", testFlowWakePartitionLimit},
	{"OtherNode", testFlowWakeOtherNode},
	{"Unlimited", testFlowWakeUnlimited},
}

// woken reports whether notifications hold a wake-up of queue.
func woken(notifications []store.Notification, queue string) bool {
	for _, n := range notifications {
		if sameWake(n, store.Notification{Queue: queue}) {
			return true
		}
	}
	return false
}

// wantWoken fails the test unless what happened since the listener's
// last drain woke queue (want) or did not (!want).
func (l *listener) wantWoken(t *testing.T, what, queue string, want bool) {
	t.Helper()
	if got := woken(l.drain(t), queue); got != want {
		t.Fatalf("%s: a wake-up of queue %q: %v, want %v", what, queue, got, want)
	}
}

// jobEnds are the ways a running job leaves the running state other than
// back to the queue due now (whose wake-up is older than flow control):
// each takes the job, claimed from queue, through e.
var jobEnds = []struct {
	name     string
	attempts int // the job's max_attempts
	end      func(t *testing.T, e *env, j *job.Job)
}{
	{"succeeded", 2, func(t *testing.T, e *env, j *job.Job) { e.succeed(t, j) }},
	{"failed", 2, func(t *testing.T, e *env, j *job.Job) { e.fail(t, j, false, 0) }},
	{"retried later", 2, func(t *testing.T, e *env, j *job.Job) { e.fail(t, j, true, time.Hour) }},
	{"throttled", 2, func(t *testing.T, e *env, j *job.Job) { e.throttle(t, j, time.Hour) }},
	{"canceled", 2, func(t *testing.T, e *env, j *job.Job) {
		e.cancel(t, j.ID)
		e.fail(t, j, true, 0)
	}},
	{"rescued to failed", 1, func(t *testing.T, e *env, j *job.Job) {
		e.clk.Advance(2 * j.LeaseTTL)
		if n := e.rescue(t, 10); n != 1 {
			t.Fatalf("rescued %d, want 1", n)
		}
	}},
}

// testFlowWakeEnds runs each of jobEnds on a job of a queue limited by l
// (a queue of its own each), and
// checks that it woke the queue (want) or did not.
func testFlowWakeEnds(t *testing.T, e *env, prefix string, l flow.Limits, want bool) {
	t.Helper()
	listen := e.listen(t)
	for i, end := range jobEnds {
		q := fmt.Sprintf("%s-%d", prefix, i)
		if l.Limited() {
			e.setLimits(t, q, l)
		}
		e.insert(t, job.InsertParams{Queue: q, Kind: "k", MaxAttempts: end.attempts, PartitionKey: "p", LeaseTTL: time.Minute})
		j := e.claimOne(t, q)
		listen.drain(t) // the insert's and the limits' wake-ups
		end.end(t, e, j)
		listen.wantWoken(t, end.name, q, want)
	}
}

// testFlowWakeGlobalLimit: every end of a running job of a queue with a
// global_limit wakes the queue.
func testFlowWakeGlobalLimit(t *testing.T, e *env) {
	testFlowWakeEnds(t, e, "wake-global", flow.Limits{GlobalLimit: 1}, true)
}

// testFlowWakePartitionLimit: so does an end in a queue with a
// partition_limit.
func testFlowWakePartitionLimit(t *testing.T, e *env) {
	testFlowWakeEnds(t, e, "wake-partition", flow.Limits{PartitionLimit: 1}, true)
}

// testFlowWakeUnlimited: the ends of jobs of a queue without limits, or
// whose limits count nothing (a rate, a throttle_by), wake no one.
func testFlowWakeUnlimited(t *testing.T, e *env) {
	testFlowWakeEnds(t, e, "wake-unlimited", flow.Limits{}, false)
	testFlowWakeEnds(t, e, "wake-rated", flow.Limits{Rate: &flow.Rate{Limit: 1000, Period: time.Second},
		ThrottleBy: byPartition}, false)
}

// testFlowWakeOtherNode: a job that another node claimed and finishes,
// in a batch with other successes, wakes the global-limited queue once
// for the listeners of this node, where a claimer waits for room.
func testFlowWakeOtherNode(t *testing.T, e *env) {
	const q = "wake-nodes"
	e.setLimits(t, q, flow.Limits{GlobalLimit: 3})
	e.insertN(t, 4, job.InsertParams{Queue: q, Kind: "k"})
	b := e.otherNode(t)
	held := claimFrom(t, b, q, 10)
	if len(held) != 3 {
		t.Fatalf("node b claimed %d, want the limit's 3", len(held))
	}
	e.claimNone(t, q) // this node's claimer, refused for want of room
	l := e.listen(t)
	l.drain(t)
	outcomes := make([]store.Outcome, len(held))
	for i, j := range held {
		outcomes[i] = store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded}}
	}
	if _, err := b.JobFinish(t.Context(), outcomes); err != nil {
		t.Fatalf("JobFinish on node b: %v", err)
	}
	n := 0
	for _, got := range l.drain(t) {
		if sameWake(got, store.Notification{Queue: q}) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d wake-ups of %q for a batch of %d successes, want one", n, q, len(held))
	}
	if got := len(e.claim(t, q, 10)); got != 1 {
		t.Fatalf("claimed %d once woken, want the last job", got)
	}
}
