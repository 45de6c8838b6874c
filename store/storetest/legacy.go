package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The drivers' tests of the migration that moved the journal into the
// job's row (PostgreSQL 005_journal, SQLite 004_journal) share the jobs
// and checks below: each writes LegacyJobs in its schema of before, with
// the journal table's rows, reads them back as its JobEvents did, migrates,
// and calls CheckMigratedJournals.

// LegacyJob is a job as the schema before the journal moved into the row
// held it: its row's state and the rows of the journal table that jobd's
// statements wrote on its way.
type LegacyJob struct {
	Name            string // also its queue
	State           job.State
	Attempt         int
	CancelRequested bool
	Events          []job.Event // Kind, At, Attempt and Detail, oldest first

	// ID is the job's id; Token, a running job's lease token.
	ID, Token uuid.UUID
}

// LegacyRow is what a LegacyJob's row holds beyond its state.
type LegacyRow struct {
	CreatedAt, UpdatedAt time.Time
	StartedAt            *time.Time // the first claim
	FinishedAt           *time.Time // final jobs: the last event
	LeaseOwner           *string    // the last claim's owner
	LeaseExpiresAt       *time.Time // running jobs
}

// Row returns the values of j's row that follow from its journal.
func (j *LegacyJob) Row() LegacyRow {
	first, last := j.Events[0], j.Events[len(j.Events)-1]
	r := LegacyRow{CreatedAt: first.At, UpdatedAt: last.At}
	for _, e := range j.Events {
		if e.Kind == job.EventClaimed {
			r.LeaseOwner = &e.Detail
			if r.StartedAt == nil {
				r.StartedAt = &e.At
			}
		}
	}
	if j.State == job.StateRunning {
		expires := last.At.Add(time.Hour)
		r.LeaseExpiresAt = &expires
	}
	if j.State.Final() {
		r.FinishedAt = &last.At
	}
	return r
}

// LegacyJobs returns jobs, each of its own queue, with fresh ids (and
// lease tokens when running), on every path the journal could record
// before it moved into the row: queued, claimed, retried, requeued,
// rescued, succeeded, failed, canceled (queued or running), cancel
// requested, retried by an operator. Their events are a second or more
// apart, from start.
func LegacyJobs(start time.Time) []LegacyJob {
	at := func(n int) time.Time { return start.Add(time.Duration(n) * time.Second) }
	ev := func(kind job.EventKind, n, attempt int, detail string) job.Event {
		return job.Event{Kind: kind, At: at(n), Attempt: attempt, Detail: detail}
	}
	queued := func(n int) job.Event { return ev(job.EventQueued, n, 0, "") }
	jobs := []LegacyJob{
		{Name: "queued", State: job.StateQueued, Events: []job.Event{queued(0)}},
		{Name: "running", State: job.StateRunning, Attempt: 1, Events: []job.Event{queued(1), ev(job.EventClaimed, 2, 1, "n1")}},
		{Name: "succeeded", State: job.StateSucceeded, Attempt: 1, Events: []job.Event{
			queued(2), ev(job.EventClaimed, 3, 1, "n1"), ev(job.EventSucceeded, 4, 1, "")}},
		{Name: "retried-succeeded", State: job.StateSucceeded, Attempt: 2, Events: []job.Event{
			queued(3), ev(job.EventClaimed, 4, 1, "n1"), ev(job.EventRetried, 5, 1, "boom"),
			ev(job.EventClaimed, 6, 2, "n2"), ev(job.EventSucceeded, 7, 2, "")}},
		{Name: "retried", State: job.StateQueued, Attempt: 1, Events: []job.Event{
			queued(4), ev(job.EventClaimed, 5, 1, ""), ev(job.EventRetried, 6, 1, "exit 1: \"x\" <é>")}},
		{Name: "requeued", State: job.StateQueued, Attempt: 0, Events: []job.Event{
			queued(5), ev(job.EventClaimed, 6, 1, "n1"), ev(job.EventRequeued, 7, 1, "")}},
		{Name: "rescued-running", State: job.StateRunning, Attempt: 2, Events: []job.Event{
			queued(6), ev(job.EventClaimed, 7, 1, "n1"), ev(job.EventRescued, 8, 1, job.LeaseExpired),
			ev(job.EventClaimed, 9, 2, "n2")}},
		{Name: "failed", State: job.StateFailed, Attempt: 1, Events: []job.Event{
			queued(7), ev(job.EventClaimed, 8, 1, "n1"), ev(job.EventFailed, 9, 1, "boom")}},
		{Name: "canceled-queued", State: job.StateCanceled, Events: []job.Event{
			queued(8), ev(job.EventCanceled, 9, 0, "")}},
		{Name: "canceled-running", State: job.StateCanceled, Attempt: 1, Events: []job.Event{
			queued(9), ev(job.EventClaimed, 10, 1, "n1"), ev(job.EventCancelRequested, 11, 1, ""),
			ev(job.EventCanceled, 12, 1, "stopped")}},
		{Name: "cancel-requested", State: job.StateRunning, Attempt: 1, CancelRequested: true, Events: []job.Event{
			queued(10), ev(job.EventClaimed, 11, 1, "n1"), ev(job.EventCancelRequested, 12, 1, "")}},
		{Name: "cancel-requested-succeeded", State: job.StateSucceeded, Attempt: 1, CancelRequested: true, Events: []job.Event{
			queued(11), ev(job.EventClaimed, 12, 1, "n1"), ev(job.EventCancelRequested, 13, 1, ""),
			ev(job.EventSucceeded, 14, 1, "")}},
		{Name: "manual-retry", State: job.StateQueued, Attempt: 0, Events: []job.Event{
			queued(12), ev(job.EventClaimed, 13, 1, "n1"), ev(job.EventFailed, 14, 1, "boom"),
			ev(job.EventManualRetry, 15, 0, "")}},
	}
	for i := range jobs {
		jobs[i].ID = uuid.Must(uuid.NewV7())
		if jobs[i].State == job.StateRunning {
			jobs[i].Token = uuid.New()
		}
	}
	return jobs
}

// LegacyEvent is one row of the journal table: an event of a job.
type LegacyEvent struct {
	Job   *LegacyJob
	Event job.Event
}

// LegacyEvents returns the journal rows of jobs in the order jobd wrote
// them: by time, across jobs.
func LegacyEvents(jobs []LegacyJob) []LegacyEvent {
	var all []LegacyEvent
	for i := range jobs {
		for _, e := range jobs[i].Events {
			all = append(all, LegacyEvent{Job: &jobs[i], Event: e})
		}
	}
	slices.SortStableFunc(all, func(a, b LegacyEvent) int { return a.Event.At.Compare(b.Event.At) })
	return all
}

// CheckMigratedJournals checks the journals of jobs in s, migrated:
// before holds, by job name, what the driver's JobEvents returned before
// the migration (the journal table's rows). First it requires before to
// be the jobs' events, which the driver's test wrote; then JobEvents to
// return exactly before's entries, numbered 1, 2, 3… per job (the old ids
// were global). Then the migrated jobs move on (finished, claimed,
// canceled, retried), at clk's time, and their journals must go on from
// there: their claims are stored, so nothing is implied twice or lost.
func CheckMigratedJournals(t *testing.T, s store.Store, clk *clock.Fake, jobs []LegacyJob, before map[string][]job.Event) {
	t.Helper()
	ctx := t.Context()
	byName := make(map[string]LegacyJob, len(jobs))
	for _, j := range jobs {
		byName[j.Name] = j
		want := slices.Clone(j.Events)
		for i := range want {
			want[i].ID, want[i].JobID = int64(i+1), j.ID
		}
		old := slices.Clone(before[j.Name])
		for i := range old {
			old[i].ID = int64(i + 1)
		}
		sameJournal(t, j.Name+", before the migration", old, want)
		before[j.Name] = want

		got, err := s.JobEvents(ctx, j.ID)
		if err != nil {
			t.Fatalf("JobEvents of %s: %v", j.Name, err)
		}
		sameJournal(t, j.Name+", migrated", got, want)
	}

	now := clk.Now()
	movedOn := func(name string, evs ...job.Event) {
		t.Helper()
		j := byName[name]
		want := slices.Clone(before[name])
		for _, e := range evs {
			e.ID, e.JobID, e.At = int64(len(want)+1), j.ID, now
			want = append(want, e)
		}
		got, err := s.JobEvents(ctx, j.ID)
		if err != nil {
			t.Fatalf("JobEvents of %s: %v", name, err)
		}
		sameJournal(t, name+", moved on", got, want)
	}
	finish := func(id, token uuid.UUID, o store.Outcome) {
		t.Helper()
		o.Lease = store.Lease{ID: id, Token: token}
		res, err := s.JobFinish(ctx, []store.Outcome{o})
		if err != nil || res[0].Lost {
			t.Fatalf("JobFinish of %s: %+v %v", id, res, err)
		}
	}
	claim := func(name, owner string) *job.Job {
		t.Helper()
		got, err := s.JobClaim(ctx, store.ClaimParams{Queue: name, Max: 1, Owner: owner})
		if err != nil || len(got) != 1 {
			t.Fatalf("JobClaim of %s: %d jobs, %v", name, len(got), err)
		}
		return got[0]
	}
	ev := func(kind job.EventKind, attempt int, detail string) job.Event {
		return job.Event{Kind: kind, Attempt: attempt, Detail: detail}
	}

	j := byName["running"]
	finish(j.ID, j.Token, store.Outcome{Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "disk full", Retryable: true}})
	movedOn("running", ev(job.EventRetried, 1, "disk full"))

	j = byName["rescued-running"]
	finish(j.ID, j.Token, store.Outcome{Outcome: job.Outcome{Status: store.OutcomeSucceeded}})
	movedOn("rescued-running", ev(job.EventSucceeded, 2, ""))

	j = byName["cancel-requested"]
	finish(j.ID, j.Token, store.Outcome{Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "boom", Retryable: true}})
	movedOn("cancel-requested", ev(job.EventCanceled, 1, "boom"))

	c := claim("queued", "n9")
	movedOn("queued", ev(job.EventClaimed, 1, "n9"))
	finish(c.ID, c.LeaseToken, store.Outcome{Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "once", Retryable: true}})
	movedOn("queued", ev(job.EventClaimed, 1, "n9"), ev(job.EventRetried, 1, "once"))

	claim("retried", "n9")
	movedOn("retried", ev(job.EventClaimed, 2, "n9"))

	if _, err := s.JobCancel(ctx, byName["requeued"].ID); err != nil {
		t.Fatal(err)
	}
	movedOn("requeued", ev(job.EventCanceled, 0, ""))

	if _, err := s.JobRetry(ctx, byName["failed"].ID); err != nil {
		t.Fatal(err)
	}
	movedOn("failed", ev(job.EventManualRetry, 0, ""))

	movedOn("succeeded")
	movedOn("retried-succeeded")
	movedOn("cancel-requested-succeeded")
}

// sameJournal requires got to hold want's entries: ids, jobs, kinds,
// times, attempts and details.
func sameJournal(t *testing.T, name string, got, want []job.Event) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = g.ID == w.ID && g.JobID == w.JobID && g.Kind == w.Kind && g.At.Equal(w.At) &&
			g.Attempt == w.Attempt && g.Detail == w.Detail
	}
	if !ok {
		t.Errorf("journal of %s:\n got %s\nwant %s", name, fmtJournal(got), fmtJournal(want))
	}
}

func fmtJournal(evs []job.Event) string {
	s := ""
	for _, e := range evs {
		s += fmt.Sprintf("\n\t%d %s %-16s %s attempt %d %q", e.ID, e.JobID, e.Kind, e.At.UTC().Format(time.RFC3339Nano), e.Attempt, e.Detail)
	}
	return s
}
