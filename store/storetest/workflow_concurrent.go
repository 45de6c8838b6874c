package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var workflowConcurrentTests = []test{
	{"FanInConcurrent", testWorkflowFanInConcurrent},
}

// testWorkflowFanInConcurrent finishes the 1 000 dependencies of two
// fan-ins at once, from eight goroutines over two nodes, in batches of
// several sizes, some failing: the fan-in that runs on success is
// canceled exactly once, the one that runs on any is released exactly
// once, and no finish fails (a deadlock would). Three rounds.
func testWorkflowFanInConcurrent(t *testing.T, e *env) {
	nodes := []store.Store{e.s, e.otherNode(t)}
	const n = 1000
	for round := range 3 {
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
