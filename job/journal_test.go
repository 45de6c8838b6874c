package job

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// at is the test's instant n seconds after t0.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

var t0 = time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)

func tp(t time.Time) *time.Time { return &t }

// ev is an expected journal entry, without its id and job.
func ev(kind EventKind, when time.Time, attempt int, detail string) Event {
	return Event{Kind: kind, At: when, Attempt: attempt, Detail: detail}
}

// wantJournal compares a rendered journal with want, entry by entry, and
// checks the ids (1, 2, 3…) and the job id.
func wantJournal(t *testing.T, name string, id uuid.UUID, got, want []Event) {
	t.Helper()
	var b strings.Builder
	ok := len(got) == len(want)
	for i := range max(len(got), len(want)) {
		var g, w Event
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
			w.ID, w.JobID = int64(i+1), id
		}
		mark := "  "
		if g.ID != w.ID || g.JobID != w.JobID || g.Kind != w.Kind || !g.At.Equal(w.At) || g.Attempt != w.Attempt || g.Detail != w.Detail {
			ok, mark = false, "! "
		}
		fmt.Fprintf(&b, "\n%sgot  %d %-16s %v attempt %d %q\n  want %d %-16s %v attempt %d %q",
			mark, g.ID, g.Kind, g.At, g.Attempt, g.Detail, w.ID, w.Kind, w.At, w.Attempt, w.Detail)
	}
	if !ok {
		t.Errorf("%s: journal differs:%s", name, b.String())
	}
}

// TestJournalRender renders rows in each shape a row can have.
func TestJournalRender(t *testing.T) {
	id := uuid.Must(uuid.NewV7())
	stored := []Event{ev(EventClaimed, at(1), 1, "n1"), ev(EventRetried, at(2), 1, "boom")}
	cases := []struct {
		name   string
		row    Job
		stored []Event
		want   []Event
	}{
		{"queued, never claimed", Job{State: StateQueued}, nil,
			[]Event{ev(EventQueued, at(0), 0, "")}},
		{"running, its claim implied", Job{State: StateRunning, Attempt: 1, LeaseOwner: "n1", AttemptedAt: tp(at(1))}, nil,
			[]Event{ev(EventQueued, at(0), 0, ""), ev(EventClaimed, at(1), 1, "n1")}},
		{"succeeded, claim and success implied",
			Job{State: StateSucceeded, Attempt: 1, LeaseOwner: "n1", AttemptedAt: tp(at(1)), FinishedAt: tp(at(2))}, nil,
			[]Event{ev(EventQueued, at(0), 0, ""), ev(EventClaimed, at(1), 1, "n1"), ev(EventSucceeded, at(2), 1, "")}},
		{"succeeded on a second attempt",
			Job{State: StateSucceeded, Attempt: 2, LeaseOwner: "n2", AttemptedAt: tp(at(3)), FinishedAt: tp(at(4))}, stored,
			[]Event{ev(EventQueued, at(0), 0, ""), ev(EventClaimed, at(1), 1, "n1"), ev(EventRetried, at(2), 1, "boom"),
				ev(EventClaimed, at(3), 2, "n2"), ev(EventSucceeded, at(4), 2, "")}},
		{"succeeded, its claim stored (cancel requested)",
			Job{State: StateSucceeded, Attempt: 1, LeaseOwner: "n1", FinishedAt: tp(at(3))},
			[]Event{ev(EventClaimed, at(1), 1, "n1"), ev(EventCancelRequested, at(2), 1, "")},
			[]Event{ev(EventQueued, at(0), 0, ""), ev(EventClaimed, at(1), 1, "n1"), ev(EventCancelRequested, at(2), 1, ""),
				ev(EventSucceeded, at(3), 1, "")}},
		{"failed: everything stored but queued",
			Job{State: StateFailed, Attempt: 1, LeaseOwner: "n1", FinishedAt: tp(at(2))},
			[]Event{ev(EventClaimed, at(1), 1, "n1"), ev(EventFailed, at(2), 1, "boom")},
			[]Event{ev(EventQueued, at(0), 0, ""), ev(EventClaimed, at(1), 1, "n1"), ev(EventFailed, at(2), 1, "boom")}},
		{"queued again, claims stored", Job{State: StateQueued, Attempt: 1, LeaseOwner: "n1"}, stored,
			[]Event{ev(EventQueued, at(0), 0, ""), ev(EventClaimed, at(1), 1, "n1"), ev(EventRetried, at(2), 1, "boom")}},
	}
	for _, tc := range cases {
		tc.row.ID, tc.row.CreatedAt = id, at(0)
		before := append([]Event(nil), tc.stored...)
		wantJournal(t, tc.name, id, Journal(&tc.row, tc.stored), tc.want)
		if !reflect.DeepEqual(tc.stored, before) {
			t.Errorf("%s: Journal changed the stored entries it was given", tc.name)
		}
	}
}

func TestMarshalJournal(t *testing.T) {
	if raw, err := MarshalJournal(nil); raw != nil || err != nil {
		t.Fatalf("MarshalJournal(nil) = %s, %v; want nil (SQL NULL)", raw, err)
	}
	if evs, err := ParseJournal(nil); evs != nil || err != nil {
		t.Fatalf("ParseJournal(nil) = %v, %v; want none", evs, err)
	}
	in := []Event{
		{ID: 7, JobID: uuid.New(), Kind: EventClaimed, At: at(1), Attempt: 1, Detail: "node <a> & b"},
		{Kind: EventRetried, At: at(2).Add(987 * time.Microsecond), Attempt: 1, Detail: "exit 1: \"x\"\n\ttab é ☃"},
		{Kind: EventManualRetry, At: at(3), Attempt: 0},
	}
	raw, err := MarshalJournal(in)
	if err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprintf(`{"kind":"claimed","at":%d,"attempt":1,"detail":"node <a> & b"}`, at(1).UnixMicro())
	last := fmt.Sprintf(`{"kind":"manual-retry","at":%d,"attempt":0}]`, at(3).UnixMicro())
	if !strings.HasPrefix(string(raw), "["+first+",") || !strings.HasSuffix(string(raw), ","+last) {
		t.Fatalf("MarshalJournal = %s; want compact entries, no empty detail, no id", raw)
	}
	out, err := ParseJournal(raw)
	if err != nil {
		t.Fatal(err)
	}
	in[0].ID, in[0].JobID = 0, uuid.Nil
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", out, in)
	}
	// What a migration writes (another key order, no detail) reads alike.
	out, err = ParseJournal([]byte(`[{"at": 1, "kind": "failed", "attempt": 2, "detail": ""}]`))
	if err != nil || !reflect.DeepEqual(out, []Event{{Kind: EventFailed, At: time.UnixMicro(1).UTC(), Attempt: 2}}) {
		t.Fatalf("ParseJournal: %+v %v", out, err)
	}
	if _, err := ParseJournal([]byte(`{"kind":"x"}`)); err == nil {
		t.Fatal("ParseJournal of an object: no error")
	}
}

// row models what a store does with a job's row: the claim and the hot
// success, which no Go decision makes, and applying a Transition, which
// decides nothing. The journal tests below run every family of
// transitions through it.
type row struct {
	j      Job
	stored []Event
}

func newRow(maxAttempts int) *row {
	return &row{j: Job{ID: uuid.Must(uuid.NewV7()), State: StateQueued, MaxAttempts: maxAttempts, CreatedAt: at(0)}}
}

// claim is claim.sql: running, the next attempt, attempted_at now.
func (r *row) claim(t *testing.T, when time.Time, owner string) {
	t.Helper()
	if r.j.State != StateQueued {
		t.Fatalf("claim of a %s job", r.j.State)
	}
	r.j.State, r.j.Attempt, r.j.LeaseOwner, r.j.AttemptedAt = StateRunning, r.j.Attempt+1, owner, tp(when)
}

// succeedHot is finish_succeeded.sql: state and finished_at, nothing read.
func (r *row) succeedHot(when time.Time) {
	r.j.State, r.j.FinishedAt = SucceededState, tp(when)
}

// apply writes a decided transition as set_state_if_running.sql and
// job_set_state.sql do.
func (r *row) apply(t *testing.T, tr Transition, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if tr.From != r.j.State {
		t.Fatalf("transition from %s of a %s job", tr.From, r.j.State)
	}
	r.j.State, r.j.Attempt, r.j.FinishedAt, r.j.CancelRequested = tr.State, tr.Attempt, tr.FinishedAt, tr.CancelRequested
	r.j.AttemptedAt = tr.AttemptedAt
	r.stored = append(r.stored, tr.Events...)
}

func (r *row) finish(t *testing.T, when time.Time, o Outcome) {
	t.Helper()
	tr, err := Finish(FactsOf(&r.j), o, when)
	r.apply(t, tr, err)
}

func (r *row) rescue(t *testing.T, when time.Time) {
	t.Helper()
	tr, err := Rescue(FactsOf(&r.j), when)
	r.apply(t, tr, err)
}

func (r *row) cancel(t *testing.T, when time.Time) {
	t.Helper()
	tr, write, err := Cancel(FactsOf(&r.j), when)
	if err == nil && !write {
		return
	}
	r.apply(t, tr, err)
}

func (r *row) retry(t *testing.T, when time.Time) {
	t.Helper()
	tr, err := Retry(FactsOf(&r.j), when)
	r.apply(t, tr, err)
}

var (
	succeeded = Outcome{Status: OutcomeSucceeded}
	retryable = Outcome{Status: OutcomeFailed, Error: "boom", Retryable: true, RetryDelay: time.Second}
	permanent = Outcome{Status: OutcomeFailed, Error: "boom"}
	honoured  = Outcome{Status: OutcomeCanceled, Error: "stopped"}
	released  = Outcome{Status: OutcomeReleased}
)

// TestJournalPaths runs every family of transitions (Finish with each
// outcome, Rescue, Cancel, Retry) and their sequences through a row, and
// requires the rendered journal to be exactly what the journal table
// held before the journal moved into the row: one entry per transition,
// in order, each at its transaction's time, naming the attempt the old
// statements named and the same detail.
func TestJournalPaths(t *testing.T) {
	q := ev(EventQueued, at(0), 0, "")
	paths := []struct {
		name        string
		maxAttempts int
		run         func(t *testing.T, r *row)
		want        []Event
	}{
		{"inserted", 3, func(t *testing.T, r *row) {},
			[]Event{q}},
		{"claimed", 3, func(t *testing.T, r *row) { r.claim(t, at(1), "n1") },
			[]Event{q, ev(EventClaimed, at(1), 1, "n1")}},
		{"succeeded (hot path)", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.succeedHot(at(2))
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventSucceeded, at(2), 1, "")}},
		{"succeeded (decided)", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.finish(t, at(2), succeeded)
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventSucceeded, at(2), 1, "")}},
		{"retried, then succeeded", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.finish(t, at(2), retryable)
			r.claim(t, at(3), "n2")
			r.succeedHot(at(4))
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventRetried, at(2), 1, "boom"),
			ev(EventClaimed, at(3), 2, "n2"), ev(EventSucceeded, at(4), 2, "")}},
		{"retried until failed", 2, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.finish(t, at(2), retryable)
			r.claim(t, at(3), "n1")
			r.finish(t, at(4), retryable)
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventRetried, at(2), 1, "boom"),
			ev(EventClaimed, at(3), 2, "n1"), ev(EventFailed, at(4), 2, "boom")}},
		{"failed permanently", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.finish(t, at(2), permanent)
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventFailed, at(2), 1, "boom")}},
		{"cancel honoured by its holder", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.finish(t, at(2), honoured)
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventCanceled, at(2), 1, "stopped")}},
		{"released, claimed again", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.finish(t, at(2), released)
			r.claim(t, at(3), "n2")
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventRequeued, at(2), 1, ""),
			ev(EventClaimed, at(3), 1, "n2")}},
		{"rescued, then succeeded", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.rescue(t, at(2))
			r.claim(t, at(3), "n2")
			r.finish(t, at(4), succeeded)
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventRescued, at(2), 1, LeaseExpired),
			ev(EventClaimed, at(3), 2, "n2"), ev(EventSucceeded, at(4), 2, "")}},
		{"rescued without attempts left", 1, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.rescue(t, at(2))
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventFailed, at(2), 1, LeaseExpired)}},
		{"canceled while queued", 3, func(t *testing.T, r *row) { r.cancel(t, at(1)) },
			[]Event{q, ev(EventCanceled, at(1), 0, "")}},
		{"cancel requested twice, then succeeded", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.cancel(t, at(2))
			r.cancel(t, at(3)) // writes nothing
			r.succeedHot(at(4))
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventCancelRequested, at(2), 1, ""),
			ev(EventSucceeded, at(4), 1, "")}},
		{"cancel requested, then a retryable failure", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.cancel(t, at(2))
			r.finish(t, at(3), retryable)
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventCancelRequested, at(2), 1, ""),
			ev(EventCanceled, at(3), 1, "boom")}},
		{"cancel requested, then released", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.cancel(t, at(2))
			r.finish(t, at(3), released)
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventCancelRequested, at(2), 1, ""),
			ev(EventCanceled, at(3), 1, "")}},
		{"cancel requested, then rescued", 3, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.cancel(t, at(2))
			r.rescue(t, at(3))
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventCancelRequested, at(2), 1, ""),
			ev(EventCanceled, at(3), 1, LeaseExpired)}},
		{"failed, retried by an operator, succeeded", 1, func(t *testing.T, r *row) {
			r.claim(t, at(1), "n1")
			r.finish(t, at(2), permanent)
			r.retry(t, at(3))
			r.claim(t, at(4), "n2")
			r.succeedHot(at(5))
		}, []Event{q, ev(EventClaimed, at(1), 1, "n1"), ev(EventFailed, at(2), 1, "boom"),
			ev(EventManualRetry, at(3), 0, ""), ev(EventClaimed, at(4), 1, "n2"), ev(EventSucceeded, at(5), 1, "")}},
		{"canceled while queued, retried", 3, func(t *testing.T, r *row) {
			r.cancel(t, at(1))
			r.retry(t, at(2))
			r.claim(t, at(3), "")
		}, []Event{q, ev(EventCanceled, at(1), 0, ""), ev(EventManualRetry, at(2), 0, ""),
			ev(EventClaimed, at(3), 1, "")}},
	}
	for _, p := range paths {
		r := newRow(p.maxAttempts)
		p.run(t, r)
		wantJournal(t, p.name, r.j.ID, Journal(&r.j, r.stored), p.want)
		// What a store reads back of the column is what it wrote.
		raw, err := MarshalJournal(r.stored)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseJournal(raw)
		if err != nil {
			t.Fatal(err)
		}
		wantJournal(t, p.name+", stored and read back", r.j.ID, Journal(&r.j, back), p.want)
	}
}

// TestHotPathsWriteNoJournal: a success appends nothing and keeps the
// claim implied; every other transition stores the implied claim before
// its own entry and leaves no claim implied.
func TestHotPathsWriteNoJournal(t *testing.T) {
	running := Facts{State: StateRunning, Attempt: 1, MaxAttempts: 3, AttemptedAt: tp(at(1)), LeaseOwner: "n1"}
	tr, err := Finish(running, succeeded, at(2))
	if err != nil || tr.Events != nil || tr.AttemptedAt != running.AttemptedAt {
		t.Fatalf("success: events %+v attempted_at %v (%v); want none, attempted_at kept", tr.Events, tr.AttemptedAt, err)
	}
	for name, o := range map[string]Outcome{"retryable": retryable, "permanent": permanent, "honoured": honoured, "released": released} {
		tr, err := Finish(running, o, at(2))
		if err != nil || len(tr.Events) != 2 || tr.Events[0].Kind != EventClaimed || tr.Events[1] != tr.Event || tr.AttemptedAt != nil {
			t.Errorf("%s: events %+v attempted_at %v (%v); want the claim, then its own, none implied", name, tr.Events, tr.AttemptedAt, err)
		}
	}
	// Its claim stored already (a cancel request), a failure stores only
	// its own entry.
	stored := running
	stored.AttemptedAt = nil
	tr, err = Finish(stored, permanent, at(2))
	if err != nil || len(tr.Events) != 1 || tr.Events[0] != tr.Event {
		t.Fatalf("failure of a job whose claim is stored: events %+v (%v)", tr.Events, err)
	}
}

// TestLeavingSucceededStoresItsSuccess: a transition out of succeeded
// (none of today's families; an operator's rerun) stores the success and
// the claim the row implied before its own entry.
func TestLeavingSucceededStoresItsSuccess(t *testing.T) {
	r := newRow(3)
	r.claim(t, at(1), "n1")
	r.succeedHot(at(2))
	tr := Transition{From: StateSucceeded, Event: Event{Attempt: 0}}
	tr.requeue(at(3), EventManualRetry)
	tr.journal(FactsOf(&r.j), at(3))
	r.apply(t, tr, nil)
	r.claim(t, at(4), "n2")
	wantJournal(t, "rerun of a succeeded job", r.j.ID, Journal(&r.j, r.stored), []Event{
		ev(EventQueued, at(0), 0, ""), ev(EventClaimed, at(1), 1, "n1"), ev(EventSucceeded, at(2), 1, ""),
		ev(EventManualRetry, at(3), 0, ""), ev(EventClaimed, at(4), 1, "n2"),
	})
}
