package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var childrenTests = []test{
	{"SpawnIdempotentPerKey", testSpawnIdempotent},
	{"ParentWokenByLastChild", testParentWokenByLastChild},
	{"ChildrenEndedBeforeWait", testChildrenEndedBeforeWait},
	{"LastChildConcurrent", testLastChildConcurrent},
	{"CancelParentCancelsChildren", testCancelParentCancelsChildren},
	{"RescuedChildWakesParent", testRescuedChildWakesParent},
	{"ChildrenOfWorkflowTask", testChildrenOfWorkflowTask},
	{"PurgeKeepsChildrenOfActiveParent", testPurgeKeepsChildrenOfActiveParent},
}

// spawn spawns children of the claimed job c, one per key, in queue.
func (e *env) spawn(t *testing.T, c *job.Job, queue string, keys ...string) []store.InsertResult {
	t.Helper()
	params := make([]job.ChildParams, len(keys))
	for i, k := range keys {
		params[i] = job.ChildParams{Key: k, InsertParams: job.InsertParams{Queue: queue, Kind: "child",
			Args: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i)), MaxAttempts: 1}}
	}
	res, err := e.s.JobSpawn(t.Context(), leaseOf(c), store.SpawnParams{Children: params})
	if err != nil {
		t.Fatalf("JobSpawn: %v", err)
	}
	return res
}

// A parent that spawns a key again gets the child of that key, not a
// second one; a bad child, a stale lease and a spawn past the limit
// write nothing.
func testSpawnIdempotent(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "parent"})
	c := e.claimOne(t, job.DefaultQueue)
	first := e.spawn(t, c, "kids", "a", "b")
	for _, r := range first {
		if !r.Created || r.Job.ParentID != c.ID || r.Job.State != job.StateQueued {
			t.Fatalf("spawned %+v", r)
		}
	}
	again := e.spawn(t, c, "kids", "b", "a", "c")
	if again[0].Created || again[0].Job.ID != first[1].Job.ID || again[1].Job.ID != first[0].Job.ID || !again[2].Created {
		t.Fatalf("spawn again: %+v", again)
	}
	if got := e.get(t, again[2].Job.ID); got.ParentID != c.ID || got.ChildKey != "c" {
		t.Fatalf("child read back: parent %s key %q", got.ParentID, got.ChildKey)
	}
	_, err := e.s.JobSpawn(t.Context(), leaseOf(c), store.SpawnParams{Children: []job.ChildParams{
		{Key: "d", InsertParams: job.InsertParams{Queue: "kids", Kind: "child"}},
		{Key: "e", InsertParams: job.InsertParams{Queue: "kids"}},
	}})
	var ve *job.ValidationError
	if !errors.As(err, &ve) || ve.Field != "children[1].kind" {
		t.Fatalf("a child without a kind: %v, want a validation error of children[1].kind", err)
	}
	_, err = e.s.JobSpawn(t.Context(), leaseOf(c), store.SpawnParams{MaxChildren: 3,
		Children: []job.ChildParams{{Key: "d", InsertParams: job.InsertParams{Queue: "kids", Kind: "child"}}}})
	if !errors.As(err, &ve) || ve.Field != "children" {
		t.Fatalf("a spawn past the limit: %v, want a validation error of children", err)
	}
	stale := leaseOf(c)
	stale.Token[0] ^= 1
	_, err = e.s.JobSpawn(t.Context(), stale, store.SpawnParams{Children: []job.ChildParams{{Key: "d", InsertParams: job.InsertParams{Queue: "kids", Kind: "child"}}}})
	if !errors.Is(err, job.ErrLeaseLost) {
		t.Fatalf("spawn with a stale lease: %v, want ErrLeaseLost", err)
	}
	if n := len(e.claim(t, "kids", 10)); n != 3 {
		t.Fatalf("%d children claimable, want 3", n)
	}
}

// A parent waiting for its children holds no lease; each end counts it
// down, and the last one queues it; the claim that resumes it carries
// its children by key, with their states, results and errors.
func testParentWokenByLastChild(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "parent"})
	c := e.claimOne(t, job.DefaultQueue)
	e.spawn(t, c, "kids", "ok", "bad", "gone")
	if j := e.wait(t, c, job.WaitRequest{For: job.WaitChildren}); j.State != job.StateWaiting || j.Pending != 3 {
		t.Fatalf("wait: %s pending %d, want waiting for 3", j.State, j.Pending)
	}
	kids := e.claim(t, "kids", 3)
	byKey := map[string]*job.Job{}
	for _, k := range kids {
		byKey[k.ChildKey] = k
	}
	e.finishOne(t, store.Outcome{Lease: leaseOf(byKey["ok"]), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"sum": 7}`)}})
	e.finishOne(t, store.Outcome{Lease: leaseOf(byKey["bad"]), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "boom"}})
	if p := e.get(t, c.ID); p.State != job.StateWaiting || p.Pending != 1 {
		t.Fatalf("after two ends: %s pending %d", p.State, p.Pending)
	}
	e.claimNone(t, job.DefaultQueue)
	e.cancel(t, byKey["gone"].ID)
	e.finishOne(t, store.Outcome{Lease: leaseOf(byKey["gone"]), Outcome: job.Outcome{Status: store.OutcomeCanceled}})
	p := e.claimOne(t, job.DefaultQueue)
	if p.ID != c.ID || p.Attempt != 1 || p.Resume == nil || len(p.Resume.Children) != 3 {
		t.Fatalf("resumed parent: %s attempt %d resume %+v", p.ID, p.Attempt, p.Resume)
	}
	var sum struct{ Sum int }
	if err := p.Resume.DecodeChild("ok", &sum); err != nil || sum.Sum != 7 {
		t.Fatalf("child ok: %+v %v", sum, err)
	}
	if b := p.Resume.Children["bad"]; b.State != job.StateFailed || b.Error != "boom" || b.ID != byKey["bad"].ID {
		t.Fatalf("child bad: %+v", b)
	}
	if g := p.Resume.Children["gone"]; g.State != job.StateCanceled {
		t.Fatalf("child gone: %+v", g)
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventWaiting, job.EventWoken, job.EventClaimed)
}

// A wait for children that all ended already queues the parent at once.
func testChildrenEndedBeforeWait(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "parent"})
	c := e.claimOne(t, job.DefaultQueue)
	e.spawn(t, c, "kids", "a", "b")
	for _, k := range e.claim(t, "kids", 2) {
		e.succeed(t, k)
	}
	if j := e.wait(t, c, job.WaitRequest{For: job.WaitChildren}); j.State != job.StateQueued {
		t.Fatalf("wait after the children ended: %s, want queued", j.State)
	}
}

// The last child's end wakes its parent exactly once when its children
// end at once, from eight goroutines over two nodes, in batches; and no
// end fails (a deadlock would).
func testLastChildConcurrent(t *testing.T, e *env) {
	nodes := []store.Store{e.s, e.otherNode(t)}
	const n = 200
	e.insert(t, job.InsertParams{Kind: "parent"})
	c := e.claimOne(t, job.DefaultQueue)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%03d", i)
	}
	e.spawn(t, c, "kids", keys...)
	e.wait(t, c, job.WaitRequest{For: job.WaitChildren})
	var kids []*job.Job
	for len(kids) < n {
		got := e.claim(t, "kids", 100)
		if len(got) == 0 {
			t.Fatalf("claimed %d of %d", len(kids), n)
		}
		kids = append(kids, got...)
	}
	const workers = 8
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := nodes[w%len(nodes)]
			size := []int{1, 7, 20, 3}[w%4]
			var mine []store.Outcome
			for i := w; i < n; i += workers {
				mine = append(mine, store.Outcome{Lease: leaseOf(kids[i]), Outcome: job.Outcome{Status: store.OutcomeSucceeded}})
			}
			for len(mine) > 0 {
				k := min(size, len(mine))
				res, err := s.JobFinish(t.Context(), mine[:k])
				if err != nil {
					errs <- err
					return
				}
				for _, r := range res {
					if r.Lost {
						errs <- fmt.Errorf("an outcome reported lost")
						return
					}
				}
				mine = mine[k:]
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	woken := 0
	for _, ev := range e.events(t, c.ID) {
		if ev.Kind == job.EventWoken {
			woken++
		}
	}
	if p := e.get(t, c.ID); p.State != job.StateQueued || woken != 1 {
		t.Fatalf("parent %s, woken %d times; want queued, once", p.State, woken)
	}
}

// The cancel of a parent cancels its children that are not final, in
// its transaction: queued ones at once, running ones asked to stop.
func testCancelParentCancelsChildren(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "parent"})
	c := e.claimOne(t, job.DefaultQueue)
	res := e.spawn(t, c, "kids", "run", "wait", "done")
	run := e.claimOne(t, "kids")
	done := e.claimOne(t, "kids")
	e.succeed(t, done)
	e.wait(t, c, job.WaitRequest{For: job.WaitChildren})
	if p := e.cancel(t, c.ID); p.State != job.StateCanceled {
		t.Fatalf("parent: %s", p.State)
	}
	if j := e.get(t, run.ID); j.State != job.StateRunning || !j.CancelRequested {
		t.Fatalf("running child: %s cancel %v", j.State, j.CancelRequested)
	}
	for _, r := range res {
		if r.Job.ID == run.ID || r.Job.ID == done.ID {
			continue
		}
		if j := e.get(t, r.Job.ID); j.State != job.StateCanceled {
			t.Fatalf("queued child: %s", j.State)
		}
	}
	if j := e.get(t, done.ID); j.State != job.StateSucceeded {
		t.Fatalf("finished child: %s", j.State)
	}
}

// A child whose lease expired on its last attempt fails, and that end
// wakes its parent like any other.
func testRescuedChildWakesParent(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "parent"})
	c := e.claimOne(t, job.DefaultQueue)
	e.spawn(t, c, "kids", "a")
	e.claimOne(t, "kids")
	e.wait(t, c, job.WaitRequest{For: job.WaitChildren})
	e.clk.Advance(2 * job.DefaultLeaseTTL)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	p := e.claimOne(t, job.DefaultQueue)
	if p.ID != c.ID || p.Resume.Children["a"].State != job.StateFailed {
		t.Fatalf("resumed %s with %+v", p.ID, p.Resume)
	}
}

// A child of a workflow task is a task of that workflow (in its graph,
// its counters): the workflow ends only once the children and the rest
// of its tasks are final.
func testChildrenOfWorkflowTask(t *testing.T, e *env) {
	f := e.submit(t, "spawning", wtask("wq", "fan"), wtask("wq", "after", "fan"))
	fan := e.claimOne(t, "wq")
	res := e.spawn(t, fan, "kids", "a", "b")
	for _, r := range res {
		if r.Job.WorkflowID != f.Workflow.ID || r.Job.Ref != "fan/"+r.Job.ChildKey || r.Job.RunOn != job.RunOnSuccess {
			t.Fatalf("child %+v: want a task of the workflow, ref fan/<key>", r.Job)
		}
	}
	if d := e.workflow(t, f.Workflow.ID); d.TaskCount != 4 || len(d.Tasks) != 4 {
		t.Fatalf("workflow: %d tasks (%d read), want 4", d.TaskCount, len(d.Tasks))
	}
	e.wait(t, fan, job.WaitRequest{For: job.WaitChildren})
	for _, k := range e.claim(t, "kids", 2) {
		e.succeed(t, k)
	}
	if d := e.workflow(t, f.Workflow.ID); d.State != job.WorkflowRunning || d.Succeeded != 2 {
		t.Fatalf("workflow after the children: %s, %d succeeded", d.State, d.Succeeded)
	}
	fan = e.claimOne(t, "wq")
	e.succeed(t, fan)
	e.succeed(t, e.claimOne(t, "wq")) // after, released by fan's end
	if d := e.workflow(t, f.Workflow.ID); d.State != job.WorkflowSucceeded || d.Succeeded != 4 {
		t.Fatalf("workflow: %s, %d succeeded; want succeeded, 4", d.State, d.Succeeded)
	}
}

// A purge of the children's queue leaves alone the children of a parent
// that is not final (a waiting one here): the parent would wait for
// them for ever. Once the parent is final its children are purged as any
// job; a child whose parent is gone too.
func testPurgeKeepsChildrenOfActiveParent(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "parent"})
	c := e.claimOne(t, job.DefaultQueue)
	res := e.spawn(t, c, "kids", "a", "b")
	e.wait(t, c, job.WaitRequest{For: job.WaitChildren})
	stray := e.insert(t, job.InsertParams{Queue: "kids", Kind: "k"})
	if n := e.purge(t, "kids"); n != 1 {
		t.Fatalf("purged %d jobs, want 1 (the job no parent spawned)", n)
	}
	e.gone(t, stray.ID)
	for _, r := range res {
		if j := e.get(t, r.Job.ID); j.State != job.StateQueued {
			t.Fatalf("child %s after the purge: %s", r.Job.ChildKey, j.State)
		}
	}
	for _, k := range e.claim(t, "kids", 2) {
		e.succeed(t, k)
	}
	p := e.claimOne(t, job.DefaultQueue)
	if p.ID != c.ID || len(p.Resume.Children) != 2 {
		t.Fatalf("resumed %s with %+v", p.ID, p.Resume)
	}
	e.succeed(t, p)
	if n := e.purge(t, "kids"); n != 2 {
		t.Fatalf("purged %d children of a final parent, want 2", n)
	}
}
