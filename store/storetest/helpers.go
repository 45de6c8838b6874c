package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// start is where every test's fake clock begins: fixed, so that failures
// reproduce, far from the real time, so that a driver reading the database's
// own now() instead of its clock shows up, and with a non-zero microsecond
// part, so that a driver keeping less than microseconds shows up too.
var start = time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)

// owner is the lease owner the suite claims as.
const owner = "storetest-node"

// env is one test's store and the fake clock it runs on, the opener, for
// a test that needs a store on another clock, and the opener of other
// nodes on the store's database.
type env struct {
	s    store.Store
	clk  *clock.Fake
	open Opener
	node NodeOpener
}

func newEnv(t *testing.T, open Opener, node NodeOpener) *env {
	t.Helper()
	clk := clock.NewFake(start)
	return &env{s: open(t, clk), clk: clk, open: open, node: node}
}

// otherNode opens another node on the test's database, on its clock.
func (e *env) otherNode(t *testing.T) store.Store {
	t.Helper()
	return e.node(t, e.s)
}

func (e *env) now() time.Time { return e.clk.Now() }

// insertMany inserts params in one call and fails the test on error.
func (e *env) insertMany(t *testing.T, params ...job.InsertParams) []store.InsertResult {
	t.Helper()
	res, err := e.s.JobInsertMany(t.Context(), params)
	if err != nil {
		t.Fatalf("JobInsertMany: %v", err)
	}
	if len(res) != len(params) {
		t.Fatalf("JobInsertMany: %d results for %d params", len(res), len(params))
	}
	return res
}

// insert inserts one job that must be created.
func (e *env) insert(t *testing.T, p job.InsertParams) *job.Job {
	t.Helper()
	res := e.insertMany(t, p)[0]
	if !res.Created {
		t.Fatalf("insert %+v: Created = false, want a new job", p)
	}
	return res.Job
}

// insertN inserts n jobs of kind, one call each, so they are created in order.
func (e *env) insertN(t *testing.T, n int, p job.InsertParams) []*job.Job {
	t.Helper()
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = e.insert(t, p)
	}
	return jobs
}

func (e *env) get(t *testing.T, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := e.s.JobGet(t.Context(), id)
	if err != nil {
		t.Fatalf("JobGet %s: %v", id, err)
	}
	return j
}

// gone asserts that the job no longer exists.
func (e *env) gone(t *testing.T, id uuid.UUID) {
	t.Helper()
	if _, err := e.s.JobGet(t.Context(), id); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("JobGet %s: err = %v, want job.ErrNotFound", id, err)
	}
}

func (e *env) claim(t *testing.T, queue string, max int) []*job.Job {
	t.Helper()
	jobs, err := e.s.JobClaim(t.Context(), store.ClaimParams{Queue: queue, Max: max, Owner: owner})
	if err != nil {
		t.Fatalf("JobClaim %q: %v", queue, err)
	}
	if len(jobs) > max {
		t.Fatalf("JobClaim %q max %d: got %d jobs", queue, max, len(jobs))
	}
	return jobs
}

// claimOne claims with Max 1 and requires a job.
func (e *env) claimOne(t *testing.T, queue string) *job.Job {
	t.Helper()
	jobs := e.claim(t, queue, 1)
	if len(jobs) != 1 {
		t.Fatalf("JobClaim %q: got no job, want one", queue)
	}
	return jobs[0]
}

// claimNone requires that nothing of queue is claimable.
func (e *env) claimNone(t *testing.T, queue string) {
	t.Helper()
	if jobs := e.claim(t, queue, 10); len(jobs) != 0 {
		t.Fatalf("JobClaim %q: claimed %s, want nothing", queue, idList(jobs))
	}
}

func (e *env) finish(t *testing.T, outcomes ...store.Outcome) []store.FinishResult {
	t.Helper()
	res, err := e.s.JobFinish(t.Context(), outcomes)
	if err != nil {
		t.Fatalf("JobFinish: %v", err)
	}
	if len(res) != len(outcomes) {
		t.Fatalf("JobFinish: %d results for %d outcomes", len(res), len(outcomes))
	}
	return res
}

// finishOne applies one outcome whose lease must be held.
func (e *env) finishOne(t *testing.T, o store.Outcome) store.FinishResult {
	t.Helper()
	res := e.finish(t, o)[0]
	if res.Lost {
		t.Fatalf("JobFinish %s %s: Lost, want the lease held", o.ID, o.Status)
	}
	return res
}

func (e *env) succeed(t *testing.T, j *job.Job) {
	t.Helper()
	e.finishOne(t, store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{}`)}})
}

func (e *env) fail(t *testing.T, j *job.Job, retryable bool, delay time.Duration) store.FinishResult {
	t.Helper()
	return e.finishOne(t, store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "boom", Retryable: retryable, RetryDelay: delay}})
}

func (e *env) cancel(t *testing.T, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := e.s.JobCancel(t.Context(), id)
	if err != nil {
		t.Fatalf("JobCancel %s: %v", id, err)
	}
	return j
}

func (e *env) rescue(t *testing.T, limit int) int {
	t.Helper()
	n, err := e.s.JobRescue(t.Context(), limit)
	if err != nil {
		t.Fatalf("JobRescue: %v", err)
	}
	return n
}

func (e *env) list(t *testing.T, p store.ListParams) *store.ListResult {
	t.Helper()
	res, err := e.s.JobList(t.Context(), p)
	if err != nil {
		t.Fatalf("JobList %+v: %v", p, err)
	}
	return res
}

// total is the number of jobs in the store.
func (e *env) total(t *testing.T) int64 {
	t.Helper()
	return e.list(t, store.ListParams{}).Total
}

func (e *env) events(t *testing.T, id uuid.UUID) []job.Event {
	t.Helper()
	evs, err := e.s.JobEvents(t.Context(), id)
	if err != nil {
		t.Fatalf("JobEvents %s: %v", id, err)
	}
	return evs
}

// wantDetail requires a journal entry's detail to be want.
func wantDetail(t *testing.T, ev job.Event, want string) {
	t.Helper()
	if ev.Detail != want {
		t.Fatalf("journal entry %q of %s: detail %q, want %q", ev.Kind, ev.JobID, ev.Detail, want)
	}
}

// wantKinds requires the job's journal to be exactly want, oldest first.
func (e *env) wantKinds(t *testing.T, id uuid.UUID, want ...job.EventKind) {
	t.Helper()
	evs := e.events(t, id)
	got := make([]job.EventKind, len(evs))
	for i, ev := range evs {
		got[i] = ev.Kind
	}
	if !slices.Equal(got, want) {
		t.Fatalf("journal of %s = %v, want %v", id, got, want)
	}
}

func (e *env) setPaused(t *testing.T, queue string, paused bool) {
	t.Helper()
	if err := e.s.QueueSetPaused(t.Context(), queue, paused); err != nil {
		t.Fatalf("QueueSetPaused %q %v: %v", queue, paused, err)
	}
}

// leaseOf is a claimed job's lease, owner included.
func leaseOf(j *job.Job) store.Lease { return store.LeaseOf(j) }

func prio(n int) *int { return &n }

func wantState(t *testing.T, j *job.Job, want job.State) {
	t.Helper()
	if j.State != want {
		t.Fatalf("job %s: state = %q, want %q", j.ID, j.State, want)
	}
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// wantStamp checks a job's updated_at written at the clock's time at: at
// itself, or, where the store keeps updated_at strictly increasing in
// commit order (SQLite), just after the previous write's when the clock
// stood still. The suite's clock moves in steps of a second or more, so
// anything from at up to at + 1s is written "at" at.
func wantStamp(t *testing.T, what string, got, at time.Time) {
	t.Helper()
	if got.Before(at) || !got.Before(at.Add(time.Second)) {
		t.Fatalf("%s = %v, want %v or just after", what, got, at)
	}
}

func wantTimePtr(t *testing.T, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s = nil, want %v", what, want)
	}
	wantTime(t, what, *got, want)
}

func wantNil(t *testing.T, what string, got *time.Time) {
	t.Helper()
	if got != nil {
		t.Fatalf("%s = %v, want nil", what, *got)
	}
}

// wantJSON compares two JSON documents by value; empty means null.
func wantJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !jsonEqual(got, want) {
		t.Fatalf("%s = %s, want %s", what, got, want)
	}
}

func jsonEqual(a, b []byte) bool {
	decode := func(raw []byte) (any, bool) {
		if len(bytes.TrimSpace(raw)) == 0 {
			return nil, true
		}
		var v any
		return v, json.Unmarshal(raw, &v) == nil
	}
	x, okx := decode(a)
	y, oky := decode(b)
	return okx && oky && reflect.DeepEqual(x, y)
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

// wantIDs requires got to be exactly the jobs of want, in that order.
func wantIDs(t *testing.T, what string, got []*job.Job, want ...*job.Job) {
	t.Helper()
	if !slices.Equal(idsOf(got), idsOf(want)) {
		t.Fatalf("%s = %s, want %s", what, idList(got), idList(want))
	}
}

func idsOf(jobs []*job.Job) []uuid.UUID {
	ids := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

func idList(jobs []*job.Job) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, j := range jobs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(j.ID.String())
	}
	b.WriteByte(']')
	return b.String()
}

// unchanged requires that nothing a lease holder can write differs between
// two reads of one job.
func unchanged(t *testing.T, before, after *job.Job) {
	t.Helper()
	if before.State != after.State || before.Attempt != after.Attempt || before.LeaseToken != after.LeaseToken ||
		!timePtrEqual(before.LeaseExpiresAt, after.LeaseExpiresAt) ||
		before.Progress.Phase != after.Progress.Phase || before.Progress.Done != after.Progress.Done ||
		before.Progress.Total != after.Progress.Total || !jsonEqual(before.Progress.Items, after.Progress.Items) ||
		!jsonEqual(before.Checkpoint, after.Checkpoint) || !jsonEqual(before.Result, after.Result) ||
		before.LastError != after.LastError || !before.UpdatedAt.Equal(after.UpdatedAt) {
		t.Fatalf("job %s changed:\nbefore %+v\nafter  %+v", before.ID, before, after)
	}
}

func timePtrEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func releaseOf(j *job.Job) store.Outcome {
	return store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeReleased}}
}

func claimParams(queue string, max int, owner string) store.ClaimParams {
	return store.ClaimParams{Queue: queue, Max: max, Owner: owner}
}

// wantIDSet requires got to be exactly the jobs of want, in any order.
func wantIDSet(t *testing.T, what string, got []*job.Job, want ...*job.Job) {
	t.Helper()
	g, w := idsOf(got), idsOf(want)
	cmp := func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }
	slices.SortFunc(g, cmp)
	slices.SortFunc(w, cmp)
	if !slices.Equal(g, w) {
		t.Fatalf("%s = %s, want %s (in any order)", what, idList(got), idList(want))
	}
}

func outcomeSucceeded(j *job.Job, result string) store.Outcome {
	return store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(result)}}
}

func compareIDs(a, b *job.Job) int { return bytes.Compare(a.ID[:], b.ID[:]) }

// rounds is n, or 1 with -short: a test that repeats a race to meet it
// more often repeats it in the full run.
func rounds(n int) int {
	if testing.Short() {
		return 1
	}
	return n
}
