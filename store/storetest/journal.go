package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

var journalTests = []test{
	{"Sequence", testJournalSequence},
	{"Unknown", testJournalUnknown},
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
