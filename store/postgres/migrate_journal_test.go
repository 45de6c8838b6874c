package postgres

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/pgtest"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// legacyJob is a job as the schema of migration 004 held it: its row and
// the rows of the journal table that jobd's statements wrote on its way.
type legacyJob struct {
	name    string // also its queue
	state   job.State
	attempt int
	cancel  bool
	events  []job.Event // Kind, At, Attempt, Detail, oldest first
	id      uuid.UUID
	token   uuid.UUID // when running
}

// legacyJobs are jobs on every path the journal could record before it
// moved into the row: queued, claimed, retried, requeued, rescued,
// succeeded, failed, canceled (queued or running), cancel requested,
// retried by an operator.
func legacyJobs(start time.Time) []legacyJob {
	at := func(n int) time.Time { return start.Add(time.Duration(n) * time.Second) }
	ev := func(kind job.EventKind, n, attempt int, detail string) job.Event {
		return job.Event{Kind: kind, At: at(n), Attempt: attempt, Detail: detail}
	}
	queued := func(n int) job.Event { return ev(job.EventQueued, n, 0, "") }
	return []legacyJob{
		{name: "queued", state: job.StateQueued, events: []job.Event{queued(0)}},
		{name: "running", state: job.StateRunning, attempt: 1, events: []job.Event{queued(1), ev(job.EventClaimed, 2, 1, "n1")}},
		{name: "succeeded", state: job.StateSucceeded, attempt: 1, events: []job.Event{
			queued(2), ev(job.EventClaimed, 3, 1, "n1"), ev(job.EventSucceeded, 4, 1, "")}},
		{name: "retried-succeeded", state: job.StateSucceeded, attempt: 2, events: []job.Event{
			queued(3), ev(job.EventClaimed, 4, 1, "n1"), ev(job.EventRetried, 5, 1, "boom"),
			ev(job.EventClaimed, 6, 2, "n2"), ev(job.EventSucceeded, 7, 2, "")}},
		{name: "retried", state: job.StateQueued, attempt: 1, events: []job.Event{
			queued(4), ev(job.EventClaimed, 5, 1, ""), ev(job.EventRetried, 6, 1, "exit 1: \"x\" <é>")}},
		{name: "requeued", state: job.StateQueued, attempt: 0, events: []job.Event{
			queued(5), ev(job.EventClaimed, 6, 1, "n1"), ev(job.EventRequeued, 7, 1, "")}},
		{name: "rescued-running", state: job.StateRunning, attempt: 2, events: []job.Event{
			queued(6), ev(job.EventClaimed, 7, 1, "n1"), ev(job.EventRescued, 8, 1, job.LeaseExpired),
			ev(job.EventClaimed, 9, 2, "n2")}},
		{name: "failed", state: job.StateFailed, attempt: 1, events: []job.Event{
			queued(7), ev(job.EventClaimed, 8, 1, "n1"), ev(job.EventFailed, 9, 1, "boom")}},
		{name: "canceled-queued", state: job.StateCanceled, events: []job.Event{
			queued(8), ev(job.EventCanceled, 9, 0, "")}},
		{name: "canceled-running", state: job.StateCanceled, attempt: 1, events: []job.Event{
			queued(9), ev(job.EventClaimed, 10, 1, "n1"), ev(job.EventCancelRequested, 11, 1, ""),
			ev(job.EventCanceled, 12, 1, "stopped")}},
		{name: "cancel-requested", state: job.StateRunning, attempt: 1, cancel: true, events: []job.Event{
			queued(10), ev(job.EventClaimed, 11, 1, "n1"), ev(job.EventCancelRequested, 12, 1, "")}},
		{name: "cancel-requested-succeeded", state: job.StateSucceeded, attempt: 1, cancel: true, events: []job.Event{
			queued(11), ev(job.EventClaimed, 12, 1, "n1"), ev(job.EventCancelRequested, 13, 1, ""),
			ev(job.EventSucceeded, 14, 1, "")}},
		{name: "manual-retry", state: job.StateQueued, attempt: 0, events: []job.Event{
			queued(12), ev(job.EventClaimed, 13, 1, "n1"), ev(job.EventFailed, 14, 1, "boom"),
			ev(job.EventManualRetry, 15, 0, "")}},
	}
}

// createLegacy writes the jobs' rows and their journal rows, the latter
// in time order across jobs, as the old statements did: a detail was
// NULL when empty, but for a claim's, the lease owner as given.
func createLegacy(t *testing.T, s *Store, jobs []legacyJob) {
	t.Helper()
	ctx := t.Context()
	type row struct {
		job int
		ev  job.Event
	}
	var all []row
	for i := range jobs {
		j := &jobs[i]
		j.id = uuid.Must(uuid.NewV7())
		first, last := j.events[0], j.events[len(j.events)-1]
		var owner *string
		var startedAt *time.Time
		for _, e := range j.events {
			if e.Kind == job.EventClaimed {
				owner = &e.Detail
				if startedAt == nil {
					startedAt = &e.At
				}
			}
			all = append(all, row{i, e})
		}
		var token *[16]byte
		var expires, finished *time.Time
		if j.state == job.StateRunning {
			j.token = uuid.New()
			token, expires = (*[16]byte)(&j.token), new(last.At.Add(time.Hour))
		}
		if j.state.Final() {
			finished = &last.At
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO jobd_jobs (id, queue, kind, args, state, priority, run_at,
			attempt, max_attempts, lease_ttl, lease_token, lease_owner, lease_expires_at, cancel_requested,
			created_at, started_at, finished_at, updated_at)
			VALUES ($1, $2, 'k', '{}', $3, 100, $4, $5, 3, '60s', $6, $7, $8, $9, $4, $10, $11, $12)`,
			pgUUID(j.id), j.name, string(j.state), first.At, j.attempt, token, owner, expires, j.cancel,
			startedAt, finished, last.At)
		if err != nil {
			t.Fatalf("job %s: %v", j.name, err)
		}
	}
	slices.SortStableFunc(all, func(a, b row) int { return a.ev.At.Compare(b.ev.At) })
	for _, r := range all {
		var detail *string
		if r.ev.Detail != "" || r.ev.Kind == job.EventClaimed {
			detail = &r.ev.Detail
		}
		_, err := s.pool.Exec(ctx, `INSERT INTO jobd_job_events (job_id, at, kind, attempt, detail)
			VALUES ($1, $2, $3, $4, $5)`, pgUUID(jobs[r.job].id), r.ev.At, string(r.ev.Kind), r.ev.Attempt, detail)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// legacyEvents reads a job's journal as JobEvents did before the journal
// moved into the row.
func legacyEvents(t *testing.T, s *Store, id uuid.UUID) []job.Event {
	t.Helper()
	ctx := t.Context()
	rows, err := s.pool.Query(ctx, `SELECT id, job_id, at, kind, attempt, coalesce(detail, '')
		FROM jobd_job_events WHERE job_id = $1 ORDER BY id`, pgUUID(id))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var evs []job.Event
	for rows.Next() {
		var e job.Event
		var kind string
		if err := rows.Scan(&e.ID, uuidDest(&e.JobID), &e.At, &kind, &e.Attempt, &e.Detail); err != nil {
			t.Fatal(err)
		}
		e.Kind = job.EventKind(kind)
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// sameJournal requires got, a journal JobEvents returned, to hold want's
// entries (kind, time, attempt, detail, job), numbered 1, 2, 3….
func sameJournal(t *testing.T, name string, got, want []job.Event) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = g.ID == int64(i+1) && g.JobID == w.JobID && g.Kind == w.Kind && g.At.Equal(w.At) &&
			g.Attempt == w.Attempt && g.Detail == w.Detail
	}
	if !ok {
		t.Errorf("journal of %s:\n got %s\nwant %s", name, fmtJournal(got), fmtJournal(want))
	}
}

func fmtJournal(evs []job.Event) string {
	s := ""
	for _, e := range evs {
		s += fmt.Sprintf("\n\t%d %s %s %s attempt %d %q", e.ID, e.JobID, e.Kind, e.At.UTC().Format(time.RFC3339Nano), e.Attempt, e.Detail)
	}
	return s
}

// TestMigrateJournal creates jobs on every path in the schema of
// migration 004 with the journal rows its statements wrote, migrates,
// and requires JobEvents to return exactly the journals the old table
// held (the ids aside, now per job). Then the migrated jobs move on, and
// their journals go on from there.
func TestMigrateJournal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	start := time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)
	clk := clock.NewFake(start.Add(time.Hour))
	s, err := Open(ctx, pgtest.NewDatabase(t), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.migrateTo(ctx, 4); err != nil {
		t.Fatalf("migrate to 004: %v", err)
	}
	jobs := legacyJobs(start)
	createLegacy(t, s, jobs)
	before := make(map[string][]job.Event)
	for _, j := range jobs {
		before[j.name] = legacyEvents(t, s, j.id)
		want := slices.Clone(j.events)
		for i := range want {
			want[i].JobID = j.id
		}
		for i := range before[j.name] {
			before[j.name][i].ID = int64(i + 1) // ids were global
		}
		sameJournal(t, j.name+" (the old table)", before[j.name], want)
	}

	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for _, j := range jobs {
		got, err := s.JobEvents(ctx, j.id)
		if err != nil {
			t.Fatal(err)
		}
		sameJournal(t, j.name, got, before[j.name])
	}
	var tables int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'jobd_job_events'").Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("jobd_job_events: %d tables (%v), want it dropped", tables, err)
	}

	// The migrated jobs move on: their claims are stored, nothing of the
	// old journal is implied twice or lost.
	byName := make(map[string]legacyJob)
	for _, j := range jobs {
		byName[j.name] = j
	}
	now := clk.Now()
	later := func(name string, evs ...job.Event) {
		t.Helper()
		j := byName[name]
		want := slices.Clone(before[name])
		for _, e := range evs {
			e.JobID = j.id
			want = append(want, e)
		}
		got, err := s.JobEvents(ctx, j.id)
		if err != nil {
			t.Fatal(err)
		}
		sameJournal(t, name+", moved on", got, want)
	}
	finish := func(name string, o store.Outcome) {
		t.Helper()
		j := byName[name]
		o.Lease = store.Lease{ID: j.id, Token: j.token}
		res, err := s.JobFinish(ctx, []store.Outcome{o})
		if err != nil || res[0].Lost {
			t.Fatalf("finish %s: %+v %v", name, res, err)
		}
	}
	claim := func(name, owner string) *job.Job {
		t.Helper()
		got, err := s.JobClaim(ctx, store.ClaimParams{Queue: name, Max: 1, Owner: owner})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim %s: %d jobs, %v", name, len(got), err)
		}
		return got[0]
	}
	ev := func(kind job.EventKind, attempt int, detail string) job.Event {
		return job.Event{Kind: kind, At: now, Attempt: attempt, Detail: detail}
	}

	finish("running", store.Outcome{Status: store.OutcomeFailed, Error: "disk full", Retryable: true})
	later("running", ev(job.EventRetried, 1, "disk full"))

	finish("rescued-running", store.Outcome{Status: store.OutcomeSucceeded})
	later("rescued-running", ev(job.EventSucceeded, 2, ""))

	finish("cancel-requested", store.Outcome{Status: store.OutcomeFailed, Error: "boom", Retryable: true})
	later("cancel-requested", ev(job.EventCanceled, 1, "boom"))

	c := claim("queued", "n9")
	later("queued", ev(job.EventClaimed, 1, "n9"))
	if _, err := s.JobFinish(ctx, []store.Outcome{{Lease: store.Lease{ID: c.ID, Token: c.LeaseToken}, Status: store.OutcomeSucceeded}}); err != nil {
		t.Fatal(err)
	}
	later("queued", ev(job.EventClaimed, 1, "n9"), ev(job.EventSucceeded, 1, ""))

	claim("retried", "n9")
	later("retried", ev(job.EventClaimed, 2, "n9"))

	if _, err := s.JobCancel(ctx, byName["requeued"].id); err != nil {
		t.Fatal(err)
	}
	later("requeued", ev(job.EventCanceled, 0, ""))

	if _, err := s.JobRetry(ctx, byName["failed"].id); err != nil {
		t.Fatal(err)
	}
	later("failed", ev(job.EventManualRetry, 0, ""))

	later("succeeded")
	later("retried-succeeded")
}
