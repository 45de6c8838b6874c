package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var journalTests = []test{
	{"Sequence", testJournalSequence},
	{"Unknown", testJournalUnknown},
	{"EveryPath", testJournalEveryPath},
}

// testJournalSequence follows one job through queued, claimed, retried,
// claimed, succeeded, a second apart, and reads the journal back exactly.
func testJournalSequence(t *testing.T, e *env) {
	other := e.insert(t, job.InsertParams{Queue: "other", Kind: "k"}) // its events must not mix in
	type step struct {
		kind    job.EventKind
		attempt int
		at      time.Time
	}
	var want []step
	add := func(k job.EventKind, attempt int) { want = append(want, step{k, attempt, e.now()}) }

	j := e.insert(t, job.InsertParams{Kind: "k"})
	add(job.EventQueued, 0)
	e.clk.Advance(time.Second)
	e.fail(t, e.claimOne(t, job.DefaultQueue), true, 0)
	want = append(want, step{job.EventClaimed, 1, e.now()}, step{job.EventRetried, 1, e.now()})
	e.clk.Advance(time.Second)
	c := e.claimOne(t, job.DefaultQueue)
	add(job.EventClaimed, 2)
	e.clk.Advance(time.Second)
	e.succeed(t, c)
	add(job.EventSucceeded, 2)

	evs := e.events(t, j.ID)
	if len(evs) != len(want) {
		t.Fatalf("journal has %d entries %+v, want %d", len(evs), evs, len(want))
	}
	for i, ev := range evs {
		w := want[i]
		if ev.Kind != w.kind || ev.JobID != j.ID || ev.Attempt != w.attempt || !ev.At.Equal(w.at) {
			t.Fatalf("journal entry %d = %+v, want kind %q job %s attempt %d at %v", i, ev, w.kind, j.ID, w.attempt, w.at)
		}
		if i > 0 && ev.ID <= evs[i-1].ID {
			t.Fatalf("journal entry ids %d then %d: want oldest first", evs[i-1].ID, ev.ID)
		}
	}
	e.wantKinds(t, other.ID, job.EventQueued)
}

func testJournalUnknown(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	evs, err := e.s.JobEvents(t.Context(), uuid.Must(uuid.NewV7()))
	if err != nil || len(evs) != 0 {
		t.Fatalf("JobEvents of an unknown job: %+v %v, want none and no error", evs, err)
	}
}

// testJournalEveryPath runs jobs through every way a store writes a
// transition, a second apart, and reads each journal back exactly: ids
// 1, 2, 3… per job, kinds, times, attempts and details. A running job's
// claim comes before a cancel request made while it runs, and its
// success after both, whether a batch of successes (which reads nothing
// first) or a mixed batch applies it.
func testJournalEveryPath(t *testing.T, e *env) {
	type entry struct {
		kind    job.EventKind
		at      time.Time
		attempt int
		detail  string
	}
	journals := make(map[uuid.UUID][]entry)
	add := func(j *job.Job, kind job.EventKind, attempt int, detail string) {
		journals[j.ID] = append(journals[j.ID], entry{kind, e.now(), attempt, detail})
	}
	tick := func() { e.clk.Advance(time.Second) }
	ins := func(queue string, maxAttempts int) *job.Job {
		j := e.insert(t, job.InsertParams{Queue: queue, Kind: "k", MaxAttempts: maxAttempts})
		add(j, job.EventQueued, 0, "")
		return j
	}
	claim := func(queue string) *job.Job {
		c := e.claimOne(t, queue)
		add(c, job.EventClaimed, c.Attempt, owner)
		return c
	}

	// Asked to stop while it runs, it succeeds all the same.
	a := ins("a", 3)
	tick()
	ca := claim("a")
	tick()
	e.cancel(t, a.ID)
	add(a, job.EventCancelRequested, 1, "")
	tick()
	e.cancel(t, a.ID) // writes nothing
	tick()
	e.succeed(t, ca)
	add(a, job.EventSucceeded, 1, "")

	// Released, claimed again, its lease expires and the reaper takes it.
	b := ins("b", 3)
	tick()
	cb := claim("b")
	tick()
	e.finishOne(t, releaseOf(cb))
	add(b, job.EventRequeued, 1, "")
	tick()
	claim("b")
	e.clk.Advance(job.DefaultLeaseTTL)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d jobs, want 1", n)
	}
	add(b, job.EventRescued, 1, job.LeaseExpired)

	// One batch: a retryable failure and a success, decided together.
	c, d := ins("c", 3), ins("d", 3)
	tick()
	cc, cd := claim("c"), claim("d")
	tick()
	e.finish(t,
		store.Outcome{Lease: leaseOf(cc), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "disk full", Retryable: true}},
		outcomeSucceeded(cd, `{"ok":true}`))
	add(c, job.EventRetried, 1, "disk full")
	add(d, job.EventSucceeded, 1, "")

	// Failed for good, retried by an operator, then a success.
	f := ins("f", 1)
	tick()
	e.fail(t, claim("f"), true, 0)
	add(f, job.EventFailed, 1, "boom")
	tick()
	if _, err := e.s.JobRetry(t.Context(), f.ID); err != nil {
		t.Fatalf("JobRetry: %v", err)
	}
	add(f, job.EventManualRetry, 0, "")
	tick()
	cf := claim("f")
	tick()
	e.succeed(t, cf)
	add(f, job.EventSucceeded, 1, "")

	// Canceled while queued.
	g := ins("g", 3)
	tick()
	e.cancel(t, g.ID)
	add(g, job.EventCanceled, 0, "")

	for _, j := range []*job.Job{a, b, c, d, f, g} {
		want := journals[j.ID]
		evs := e.events(t, j.ID)
		ok := len(evs) == len(want)
		for i := 0; ok && i < len(evs); i++ {
			w, ev := want[i], evs[i]
			ok = ev.ID == int64(i+1) && ev.JobID == j.ID && ev.Kind == w.kind && ev.At.Equal(w.at) &&
				ev.Attempt == w.attempt && ev.Detail == w.detail
		}
		if !ok {
			t.Errorf("journal of %s (queue %s):\n got %+v\nwant %+v", j.ID, j.Queue, evs, want)
		}
	}
}
