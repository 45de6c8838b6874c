package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var workflowConcurrentTests = []test{
	{"FanInConcurrent", testWorkflowFanInConcurrent},
	{"CancelRacesChildren", testWorkflowCancelRacesChildren},
}

// testWorkflowFanInConcurrent finishes the 1 000 dependencies of two
// fan-ins at once, from eight goroutines over two nodes, in batches of
// several sizes, some failing: the fan-in that runs on success is
// canceled exactly once, the one that runs on any is released exactly
// once, and no finish fails (a deadlock would). Three rounds; one with
// -short.
func testWorkflowFanInConcurrent(t *testing.T, e *env) {
	nodes := []store.Store{e.s, e.otherNode(t)}
	const n = 1000
	for round := range rounds(3) {
		queue := fmt.Sprintf("parts-%d", round)
		var tasks []job.TaskParams
		var refs []string
		for i := range n {
			ref := fmt.Sprintf("p%04d", i)
			refs = append(refs, ref)
			tasks = append(tasks, wtask(queue, ref))
		}
		onSuccess := wtask("join", "on-success", refs...)
		onAny := wtask("join", "on-any", refs...)
		onAny.RunOn = job.RunOnAny
		f := e.submit(t, "fan-in", append(tasks, onSuccess, onAny)...)
		var claimed []*job.Job
		for len(claimed) < n {
			got := e.claim(t, queue, 200)
			if len(got) == 0 {
				t.Fatalf("claimed %d of %d", len(claimed), n)
			}
			claimed = append(claimed, got...)
		}
		const workers = 8
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := nodes[w%len(nodes)]
				size := []int{1, 7, 50, 3}[w%4]
				var mine []store.Outcome
				for i := w; i < n; i += workers {
					j := claimed[i]
					o := store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded}}
					if i%97 == 5 {
						o = store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "part " + j.Ref}}
					}
					mine = append(mine, o)
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
			t.Fatalf("round %d: JobFinish: %v", round, err)
		}
		failed := 0
		for i := range n {
			if i%97 == 5 {
				failed++
			}
		}
		e.wantTaskStates(t, f, map[string]job.State{"on-success": job.StateCanceled, "on-any": job.StateQueued})
		if kinds := fmt.Sprint(kindsOf(e.events(t, f.id(t, "on-success")))); kinds != "[waiting canceled]" {
			t.Fatalf("round %d: journal of the fan-in on success: %s, want one cancel", round, kinds)
		}
		if kinds := fmt.Sprint(kindsOf(e.events(t, f.id(t, "on-any")))); kinds != "[waiting released]" {
			t.Fatalf("round %d: journal of the fan-in on any: %s, want one release", round, kinds)
		}
		join := e.claimRefs(t, f, "join", 10, "on-any")[0]
		if len(join.Inputs) != n {
			t.Fatalf("round %d: fan-in on any got %d inputs", round, len(join.Inputs))
		}
		e.claimNone(t, "join")
		e.succeed(t, join)
		e.wantWorkflow(t, f, job.WorkflowFailed, n-failed+1, failed, 1)
	}
}

// testWorkflowCancelRacesChildren cancels workflows whose one task
// spawned children and waits for them while those children finish, each
// workflow's cancel on one node and its children's finishes, in batches,
// on the other, all at once: no call fails (a deadlock would: the cancel
// locks the workflow's tasks in id order, the parent first, while a
// child's end locks the child, then its parent), and every job ends as
// the rules say: the waiting parent canceled, the running children, asked
// to stop, succeeded as they report, the workflow canceled once they
// are final. Three rounds; one with -short.
func testWorkflowCancelRacesChildren(t *testing.T, e *env) {
	nodes := []store.Store{e.s, e.otherNode(t)}
	const flows, kids = 6, 12
	for round := range rounds(3) {
		queue, kidQueue := fmt.Sprintf("fan-%d", round), fmt.Sprintf("kids-%d", round)
		fs := make([]wflow, flows)
		children := make([][]*job.Job, flows)
		keys := make([]string, kids)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%02d", i)
		}
		for i := range fs {
			fs[i] = e.submit(t, fmt.Sprintf("racing-%d-%d", round, i), wtask(queue, "fan"))
		}
		byWorkflow := make(map[uuid.UUID]int, flows)
		for i, f := range fs {
			byWorkflow[f.Workflow.ID] = i
		}
		for _, fan := range e.claim(t, queue, flows) {
			e.spawn(t, fan, kidQueue, keys...)
			e.wait(t, fan, job.WaitRequest{For: job.WaitChildren})
		}
		for n := 0; n < flows*kids; {
			got := e.claim(t, kidQueue, 100)
			if len(got) == 0 {
				t.Fatalf("round %d: claimed %d of %d children", round, n, flows*kids)
			}
			for _, c := range got {
				i := byWorkflow[c.WorkflowID]
				children[i] = append(children[i], c)
			}
			n += len(got)
		}
		start := make(chan struct{})
		errs := make(chan error, 2*flows)
		var wg sync.WaitGroup
		for i := range fs {
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				if _, err := nodes[i%2].WorkflowCancel(t.Context(), fs[i].Workflow.ID); err != nil {
					errs <- fmt.Errorf("WorkflowCancel: %w", err)
				}
			}()
			go func() {
				defer wg.Done()
				<-start
				mine := children[i]
				size := []int{1, 3, 7}[i%3]
				for len(mine) > 0 {
					k := min(size, len(mine))
					outcomes := make([]store.Outcome, k)
					for n, c := range mine[:k] {
						outcomes[n] = store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeSucceeded}}
					}
					res, err := nodes[(i+1)%2].JobFinish(t.Context(), outcomes)
					if err != nil {
						errs <- fmt.Errorf("JobFinish: %w", err)
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
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, f := range fs {
			for _, c := range children[i] {
				if j := e.get(t, c.ID); j.State != job.StateSucceeded {
					t.Fatalf("round %d: child %s: %s, want succeeded", round, c.Ref, j.State)
				}
			}
			e.wantTaskStates(t, f, map[string]job.State{"fan": job.StateCanceled})
			e.wantWorkflow(t, f, job.WorkflowCanceled, kids, 0, 1)
		}
	}
}
