package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var throughputTests = []test{
	{"Counts", testThroughputCounts},
	{"Empty", testThroughputEmpty},
}

// testThroughputCounts: jobs finished since the cutoff, by queue, minute
// and final state, exactly; jobs finished before it, active jobs, a
// retryable failure (queued again) and an operator's retry (queued again)
// are not counted.
func testThroughputCounts(t *testing.T, e *env) {
	// Before the cutoff: one success, not counted.
	e.insert(t, job.InsertParams{Queue: "a", Kind: "k"})
	e.succeed(t, e.claimOne(t, "a"))
	e.clk.Advance(5 * time.Minute)
	since := e.now()

	// Minute 1: queue a succeeds twice, fails once for good, cancels a
	// queued job; a retryable failure goes back to queued.
	for range 6 {
		e.insert(t, job.InsertParams{Queue: "a", Kind: "k", MaxAttempts: 3})
	}
	e.succeed(t, e.claimOne(t, "a"))
	e.succeed(t, e.claimOne(t, "a"))
	e.fail(t, e.claimOne(t, "a"), false, 0)
	e.fail(t, e.claimOne(t, "a"), true, time.Hour)
	running := e.claimOne(t, "a") // stays running
	_ = running
	queued := e.insert(t, job.InsertParams{Queue: "a", Kind: "k"})
	e.cancel(t, queued.ID)
	first := e.now()

	// Two minutes later: queue b succeeds once; a job of a failed for
	// good and retried by an operator is queued again, not counted.
	e.clk.Advance(2 * time.Minute)
	e.insert(t, job.InsertParams{Queue: "b", Kind: "k"})
	e.succeed(t, e.claimOne(t, "b"))
	e.insert(t, job.InsertParams{Queue: "b", Kind: "k", MaxAttempts: 1})
	retried := e.claimOne(t, "b")
	e.fail(t, retried, false, 0)
	if _, err := e.s.JobRetry(t.Context(), retried.ID); err != nil {
		t.Fatalf("JobRetry: %v", err)
	}
	second := e.now()

	got, err := e.s.QueueThroughput(t.Context(), since)
	if err != nil {
		t.Fatalf("QueueThroughput: %v", err)
	}
	m1, m2 := first.UTC().Truncate(time.Minute), second.UTC().Truncate(time.Minute)
	want := []store.Throughput{
		{Queue: "a", Minute: m1, State: job.StateCanceled, Count: 1},
		{Queue: "a", Minute: m1, State: job.StateFailed, Count: 1},
		{Queue: "a", Minute: m1, State: job.StateSucceeded, Count: 2},
		{Queue: "b", Minute: m2, State: job.StateSucceeded, Count: 1},
	}
	if !equalThroughput(got, want) {
		t.Fatalf("QueueThroughput since %s:\n got  %s\n want %s", since, fmtThroughput(got), fmtThroughput(want))
	}
	// A later cutoff leaves the first minute out.
	got, err = e.s.QueueThroughput(t.Context(), second.Add(-time.Second))
	if err != nil {
		t.Fatalf("QueueThroughput: %v", err)
	}
	if !equalThroughput(got, want[3:]) {
		t.Fatalf("QueueThroughput since %s:\n got  %s\n want %s", second, fmtThroughput(got), fmtThroughput(want[3:]))
	}
}

func testThroughputEmpty(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Queue: "a", Kind: "k"})
	got, err := e.s.QueueThroughput(t.Context(), e.now().Add(-time.Hour))
	if err != nil {
		t.Fatalf("QueueThroughput: %v", err)
	}
	if got == nil || len(got) != 0 {
		t.Fatalf("QueueThroughput with no finished job = %#v, want an empty, non-nil slice", got)
	}
}

func equalThroughput(a, b []store.Throughput) bool {
	return slices.EqualFunc(a, b, func(x, y store.Throughput) bool {
		return x.Queue == y.Queue && x.Minute.Equal(y.Minute) && x.State == y.State && x.Count == y.Count
	})
}

func fmtThroughput(l []store.Throughput) string {
	s := ""
	for _, t := range l {
		s += fmt.Sprintf("[%s %s %s %d] ", t.Queue, t.Minute.UTC().Format(time.RFC3339), t.State, t.Count)
	}
	return s
}
