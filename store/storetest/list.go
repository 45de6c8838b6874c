package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var listTests = []test{
	{"Filters", testListFilters},
	{"NewestFirst", testListNewestFirst},
	{"Paging", testListPaging},
	{"Feed", testListFeed},
	{"LimitZero", testListLimitZero},
	{"IdempotencyKey", testListIdempotencyKey},
	{"NoTotal", testListNoTotal},
	{"ScanLimit", testListScanLimit},
	{"FeedExactUnderWriters", testListFeedExact},
	{"QueuesIn", testListQueuesIn},
}

const all = 1000 // a Limit above every test's job count

// wantList requires JobList(p) to return exactly want, in order, and a
// total of len(want).
func (e *env) wantList(t *testing.T, what string, p store.ListParams, want ...*job.Job) {
	t.Helper()
	if p.Limit == 0 {
		p.Limit = all
	}
	res := e.list(t, p)
	wantIDs(t, what, res.Jobs, want...)
	if res.Total != int64(len(want)) {
		t.Fatalf("%s: total = %d, want %d", what, res.Total, len(want))
	}
}

func testListFilters(t *testing.T, e *env) {
	a1 := e.insert(t, job.InsertParams{Queue: "q1", Kind: "a", LockKey: "L1", PartitionKey: "P1"})
	a2 := e.insert(t, job.InsertParams{Queue: "q1", Kind: "b", PartitionKey: "P2"})
	a3 := e.insert(t, job.InsertParams{Queue: "q2", Kind: "a", Priority: prio(200), PartitionKey: "P1"})
	a4 := e.insert(t, job.InsertParams{Queue: "q2", Kind: "b", LockKey: "L2"})
	a5 := e.insert(t, job.InsertParams{Queue: "q1", Kind: "a"})
	if c := e.claimOne(t, "q1"); c.ID != a1.ID {
		t.Fatalf("claimed %s, want %s", c.ID, a1.ID)
	}
	c := e.claimOne(t, "q2")
	if c.ID != a4.ID {
		t.Fatalf("claimed %s, want %s", c.ID, a4.ID)
	}
	e.succeed(t, c) // now: a1 running, a4 succeeded, the rest queued

	running, succeeded, queued := job.StateRunning, job.StateSucceeded, job.StateQueued
	cases := []struct {
		what string
		p    store.ListParams
		want []*job.Job
	}{
		{"no filter", store.ListParams{}, []*job.Job{a5, a4, a3, a2, a1}},
		{"queue q1", store.ListParams{Queue: "q1"}, []*job.Job{a5, a2, a1}},
		{"kind a", store.ListParams{Kind: "a"}, []*job.Job{a5, a3, a1}},
		{"states running+succeeded", store.ListParams{States: []job.State{running, succeeded}}, []*job.Job{a4, a1}},
		{"state queued", store.ListParams{States: []job.State{queued}}, []*job.Job{a5, a3, a2}},
		{"lock key L1", store.ListParams{LockKey: "L1"}, []*job.Job{a1}},
		{"partition key P1", store.ListParams{PartitionKey: "P1"}, []*job.Job{a3, a1}},
		{"queue q1 and kind a", store.ListParams{Queue: "q1", Kind: "a"}, []*job.Job{a5, a1}},
		{"queue q1 and queued", store.ListParams{Queue: "q1", States: []job.State{queued}}, []*job.Job{a5, a2}},
		{"kind nobody uses", store.ListParams{Kind: "zzz"}, nil},
		{"state failed", store.ListParams{States: []job.State{job.StateFailed}}, nil},
	}
	for _, c := range cases {
		e.wantList(t, c.what, c.p, c.want...)
	}
}

func testListNewestFirst(t *testing.T, e *env) {
	jobs := e.insertN(t, 5, job.InsertParams{Kind: "k"})
	// Claiming and finishing the oldest does not move it: the order is by id.
	e.succeed(t, e.claimOne(t, job.DefaultQueue))
	slices.Reverse(jobs)
	e.wantList(t, "default order", store.ListParams{}, jobs...)
}

func testListPaging(t *testing.T, e *env) {
	var mine, others []*job.Job
	for i := range 7 {
		mine = append(mine, e.insert(t, job.InsertParams{Queue: "q1", Kind: "k"}))
		if i%2 == 0 {
			others = append(others, e.insert(t, job.InsertParams{Queue: "q2", Kind: "k"}))
		}
	}
	slices.Reverse(mine)
	every := append(slices.Clone(mine), others...)
	slices.SortFunc(every, func(a, b *job.Job) int { return -compareIDs(a, b) })

	for _, c := range []struct {
		what string
		p    store.ListParams
		want []*job.Job
	}{
		{"all jobs", store.ListParams{}, every},
		{"queue q1", store.ListParams{Queue: "q1"}, mine},
	} {
		got := pages(t, e, c.what, c.p, 3, int64(len(c.want)))
		wantIDs(t, c.what+" paged by 3", got, c.want...)
	}
}

// pages reads every page of p, limit rows at a time, checking each page's
// total, and returns the jobs in the order the pages gave them.
func pages(t *testing.T, e *env, what string, p store.ListParams, limit int, total int64) []*job.Job {
	t.Helper()
	p.Limit = limit
	var got []*job.Job
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatalf("%s: paging does not end", what)
		}
		res := e.list(t, p)
		if res.Total != total {
			t.Fatalf("%s page %d: total = %d, want %d whatever the cursor", what, i, res.Total, total)
		}
		if len(res.Jobs) > limit {
			t.Fatalf("%s page %d: %d jobs over the limit %d", what, i, len(res.Jobs), limit)
		}
		if len(res.Jobs) == 0 {
			return got
		}
		got = append(got, res.Jobs...)
		last := res.Jobs[len(res.Jobs)-1]
		p.After = &store.Cursor{ID: last.ID, UpdatedAt: last.UpdatedAt}
	}
}

func testListFeed(t *testing.T, e *env) {
	t0 := e.now()
	jobs := e.insertN(t, 6, job.InsertParams{Kind: "k"}) // all updated at t0
	e.clk.Advance(time.Second)
	t1 := e.now()
	if got := e.claim(t, job.DefaultQueue, 2); len(got) != 2 { // jobs[0] and jobs[1], updated at t1
		t.Fatalf("claimed %d, want 2", len(got))
	}
	e.clk.Advance(time.Second)
	t2 := e.now()
	e.succeed(t, e.get(t, jobs[0].ID)) // updated at t2

	feed := func(since time.Time, states ...job.State) store.ListParams {
		return store.ListParams{UpdatedSince: &since, States: states}
	}
	cases := []struct {
		what string
		p    store.ListParams
		want []*job.Job
	}{
		// Ascending by (updated_at, id): ties at t0 in id order.
		{"feed since t0", feed(t0), []*job.Job{jobs[2], jobs[3], jobs[4], jobs[5], jobs[1], jobs[0]}},
		{"feed since t1", feed(t1), []*job.Job{jobs[1], jobs[0]}},
		{"feed since t2", feed(t2), []*job.Job{jobs[0]}},
		{"feed since t2+1s", feed(t2.Add(time.Second)), nil},
		{"feed of running since t0", feed(t0, job.StateRunning), []*job.Job{jobs[1]}},
	}
	for _, c := range cases {
		e.wantList(t, c.what, c.p, c.want...)
		for _, limit := range []int{1, 2, 4} {
			got := pages(t, e, c.what, c.p, limit, int64(len(c.want)))
			wantIDs(t, c.what+" paged", got, c.want...)
		}
	}
	wantUpdated := map[uuid.UUID]time.Time{jobs[0].ID: t2, jobs[1].ID: t1}
	for _, j := range e.list(t, store.ListParams{UpdatedSince: &t0, Limit: all}).Jobs {
		want, ok := wantUpdated[j.ID]
		if !ok {
			want = t0
		}
		wantStamp(t, "updated_at of "+j.ID.String(), j.UpdatedAt, want)
	}
}

func testListLimitZero(t *testing.T, e *env) {
	e.insertN(t, 4, job.InsertParams{Kind: "k"})
	e.insert(t, job.InsertParams{Kind: "other"})
	for _, c := range []struct {
		p     store.ListParams
		total int64
	}{
		{store.ListParams{}, 5},
		{store.ListParams{Kind: "k"}, 4},
		{store.ListParams{Kind: "none"}, 0},
	} {
		res := e.list(t, c.p)
		if len(res.Jobs) != 0 || res.Total != c.total {
			t.Fatalf("JobList %+v with limit 0: %d jobs, total %d; want no jobs, total %d", c.p, len(res.Jobs), res.Total, c.total)
		}
	}
}

// testListIdempotencyKey: the filter finds the one job of a key, in every
// order, with the other filters applied too.
func testListIdempotencyKey(t *testing.T, e *env) {
	a := e.insert(t, job.InsertParams{Queue: "q1", Kind: "a", IdempotencyKey: "key-a"})
	e.insert(t, job.InsertParams{Queue: "q1", Kind: "a", IdempotencyKey: "key-b"})
	e.insert(t, job.InsertParams{Queue: "q1", Kind: "a"})
	e.wantList(t, "key-a", store.ListParams{IdempotencyKey: "key-a"}, a)
	e.wantList(t, "key-a oldest first", store.ListParams{IdempotencyKey: "key-a", OldestFirst: true}, a)
	since := a.UpdatedAt.Add(-time.Second)
	e.wantList(t, "key-a in the feed", store.ListParams{IdempotencyKey: "key-a", UpdatedSince: &since}, a)
	e.wantList(t, "key-a, kind b", store.ListParams{IdempotencyKey: "key-a", Kind: "b"})
	e.wantList(t, "an unknown key", store.ListParams{IdempotencyKey: "nope"})
}

// testListNoTotal: NoTotal returns the same page and -1 for the total.
func testListNoTotal(t *testing.T, e *env) {
	jobs := e.insertN(t, 3, job.InsertParams{Kind: "k"})
	res := e.list(t, store.ListParams{NoTotal: true, Limit: 2})
	wantIDs(t, "NoTotal page", res.Jobs, jobs[2], jobs[1])
	if res.Total != -1 {
		t.Fatalf("NoTotal: total = %d, want -1", res.Total)
	}
	res = e.list(t, store.ListParams{NoTotal: true, Limit: 0})
	if len(res.Jobs) != 0 || res.Total != -1 {
		t.Fatalf("NoTotal, limit 0: %d jobs, total %d; want none and -1", len(res.Jobs), res.Total)
	}
}

// testListScanLimit: a bounded scan looks at no more than ScanLimit jobs
// a page; a page it ended early says where (ScannedTo), and paging on
// from there finds every match once, newest first. A full page, or a scan
// that reached the oldest job, says nothing.
func testListScanLimit(t *testing.T, e *env) {
	var jobs, rare []*job.Job
	for i := range 10 {
		p := job.InsertParams{Queue: "q", Kind: "common"}
		if i == 1 || i == 2 || i == 8 {
			p.Kind = "rare"
		}
		j := e.insert(t, p)
		jobs = append(jobs, j)
		if p.Kind == "rare" {
			rare = append(rare, j)
		}
	}
	slices.Reverse(jobs)
	slices.Reverse(rare) // newest first: jobs 8, 2, 1

	// The 4 newest jobs (9…6) hold one rare job: the page ends at job 6.
	res := e.list(t, store.ListParams{Kind: "rare", Limit: 10, ScanLimit: 4, NoTotal: true})
	wantIDs(t, "first bounded page", res.Jobs, rare[0])
	if res.ScannedTo == nil || *res.ScannedTo != jobs[3].ID {
		t.Fatalf("first bounded page: ScannedTo = %v, want job 6 %s", res.ScannedTo, jobs[3].ID)
	}
	// Paging on finds every rare job once, in order.
	var got []*job.Job
	p := store.ListParams{Kind: "rare", Limit: 10, ScanLimit: 4}
	for i := 0; ; i++ {
		if i > 10 {
			t.Fatal("bounded paging does not end")
		}
		res := e.list(t, p)
		if res.Total != 3 {
			t.Fatalf("bounded page %d: total %d, want 3 (the count is not bounded)", i, res.Total)
		}
		got = append(got, res.Jobs...)
		if res.ScannedTo == nil {
			break
		}
		p.After = &store.Cursor{ID: *res.ScannedTo}
	}
	wantIDs(t, "bounded pages", got, rare...)

	// A page filled before the scan's end says nothing: it continues
	// from its last job, as any page does.
	res = e.list(t, store.ListParams{Limit: 2, ScanLimit: 4})
	wantIDs(t, "a full bounded page", res.Jobs, jobs[0], jobs[1])
	if res.ScannedTo != nil {
		t.Fatalf("a full bounded page: ScannedTo = %s, want nil", res.ScannedTo)
	}
	// A scan that reaches the oldest job says nothing either.
	res = e.list(t, store.ListParams{Kind: "rare", Limit: 10, ScanLimit: 4, After: &store.Cursor{ID: jobs[6].ID}})
	wantIDs(t, "the last bounded page", res.Jobs, rare[1], rare[2])
	if res.ScannedTo != nil {
		t.Fatalf("the last bounded page: ScannedTo = %s, want nil", res.ScannedTo)
	}
	// Without a bound the page walks as far as it must.
	e.wantList(t, "unbounded", store.ListParams{Kind: "rare"}, rare...)
	// Nothing bounds a page without filters (every job matches), nor a
	// search by idempotency key (found by its index, however old).
	res = e.list(t, store.ListParams{Limit: 10, ScanLimit: 4})
	wantIDs(t, "a bounded page without filters", res.Jobs, jobs...)
	if res.ScannedTo != nil {
		t.Fatalf("a bounded page without filters: ScannedTo = %s", res.ScannedTo)
	}
	old := e.insert(t, job.InsertParams{Queue: "q", Kind: "common", IdempotencyKey: "old-key"})
	e.insertN(t, 5, job.InsertParams{Queue: "q", Kind: "common"})
	res = e.list(t, store.ListParams{Queue: "q", IdempotencyKey: "old-key", Limit: 10, ScanLimit: 2})
	wantIDs(t, "a bounded search by idempotency key", res.Jobs, old)
	if res.ScannedTo != nil {
		t.Fatalf("a bounded search by idempotency key: ScannedTo = %s", res.ScannedTo)
	}

	for _, bad := range []store.ListParams{
		{Limit: 1, ScanLimit: -1},
		{Limit: 1, ScanLimit: 5, OldestFirst: true},
		{Limit: 1, ScanLimit: 5, UpdatedSince: ptrTime(e.now())},
	} {
		var verr *job.ValidationError
		if _, err := e.s.JobList(t.Context(), bad); !errors.As(err, &verr) || verr.Field != "scan_limit" {
			t.Errorf("JobList %+v: %v, want a validation error of scan_limit", bad, err)
		}
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
