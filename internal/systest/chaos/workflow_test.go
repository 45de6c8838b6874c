package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
)

// The workflows of the run (issue 28), folded into the load: fan-outs
// with their fan-in, and diamonds, whose tasks are jobs of the
// workload's queues and modes (run by the same workers and nodes, and
// checked by the same checks as every job), some failing for good in
// the middle, each ending with a cleanup that runs on any end of what
// it depends on (run_on any). They are submitted straight into the
// store on the nodes' PostgreSQL (the harness's own connection pool,
// which the faults reach as they reach the nodes'), while the nodes are
// killed and the database restarts; a submission that got no answer is
// sent again with its idempotency key until one comes. The checks
// (workflow_check_test.go) prove the rules from the database's record
// and the workers' own.

// workflowEvery is how often a workflow is submitted, on average.
const workflowEvery = 2500 * time.Millisecond

// wfTask is one task of a planned workflow.
type wfTask struct {
	ref   string
	deps  []string
	runOn job.RunOn
	spec  jobSpec // its queue, mode, ms and lock key (key and times unused)
}

// wfSpec is one workflow of the workload, drawn from the seed.
type wfSpec struct {
	key      string // its idempotency key, which names it
	shape    string // "fan" or "diamond"
	at       time.Duration
	resubmit time.Duration // when not 0, the same request is sent again then
	tasks    []wfTask
}

// planWorkflows draws the run's workflows from the seed: one every
// workflowEvery on average over the fault window. A fan is root → 3 to
// 8 leaves → join → cleanup (any); a diamond is a → b, c → d, with a
// cleanup (any) on d. One task in four workflows fails for good (doomed,
// or exhausting its attempts), most often in the middle; a few tasks
// are flaky (one failed attempt, retried) and a third carry a lock key.
func planWorkflows(cfg config) []wfSpec {
	rng := rand.New(rand.NewPCG(cfg.seed, 3))
	n := max(1, int(cfg.window/workflowEvery))
	specs := make([]wfSpec, n)
	task := func(ref string, deps ...string) wfTask {
		t := wfTask{ref: ref, deps: deps, runOn: job.RunOnSuccess, spec: jobSpec{mode: modeOK}}
		switch r := rng.Float64(); {
		case r < 0.4:
			t.spec.queue = queueRemoteA
		case r < 0.8:
			t.spec.queue = queueRemoteB
		default:
			t.spec.queue = queueInproc
		}
		if rng.Float64() < 0.1 {
			t.spec.mode = modeFlaky
		}
		t.spec.ms = rng.IntN(30)
		if rng.Float64() < 0.3 {
			t.spec.lock = fmt.Sprintf("k%d", rng.IntN(lockKeys))
		}
		return t
	}
	for i := range specs {
		s := wfSpec{key: fmt.Sprintf("chaos-wf-%d-%d", cfg.seed, i), at: time.Duration(rng.Int64N(int64(cfg.window)))}
		if rng.Float64() < 0.5 {
			s.shape = "fan"
			s.tasks = append(s.tasks, task("root"))
			var leaves []string
			for l := range 3 + rng.IntN(6) {
				ref := fmt.Sprintf("leaf-%d", l)
				leaves = append(leaves, ref)
				s.tasks = append(s.tasks, task(ref, "root"))
			}
			s.tasks = append(s.tasks, task("join", leaves...))
			s.tasks = append(s.tasks, task("cleanup", "join"))
		} else {
			s.shape = "diamond"
			s.tasks = append(s.tasks, task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c"), task("cleanup", "d"))
		}
		last := len(s.tasks) - 1
		s.tasks[last].runOn = job.RunOnAny
		if rng.Float64() < 0.25 {
			// Fails for good: a middle task most often, the first sometimes.
			f := 1 + rng.IntN(last-1)
			if rng.Float64() < 0.2 {
				f = 0
			}
			s.tasks[f].spec.mode = modeDoomed
			if rng.Float64() < 0.3 {
				s.tasks[f].spec.mode = modeExhaust
			}
		}
		if rng.Float64() < 0.15 {
			s.resubmit = s.at + time.Duration(500+rng.IntN(4500))*time.Millisecond
		}
		specs[i] = s
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].at < specs[j].at })
	return specs
}

// params is the workflow's submission.
func (s wfSpec) params() job.WorkflowParams {
	p := job.WorkflowParams{Name: "chaos-" + s.shape, IdempotencyKey: s.key}
	for _, t := range s.tasks {
		req := t.spec.request()
		p.Tasks = append(p.Tasks, job.TaskParams{Ref: t.ref, DependsOn: t.deps, RunOn: t.runOn, InsertParams: job.InsertParams{
			Queue: req.Queue, Kind: req.Kind, Args: req.Args, LockKey: req.LockKey,
			LeaseTTL: time.Duration(req.LeaseTTL), MaxAttempts: req.MaxAttempts,
		}})
	}
	return p
}

// expected is how each task of s must end, by ref, and how s must end:
// a task that runs on success is canceled when a dependency did not
// succeed; any other runs, and ends as its mode says.
func (s wfSpec) expected() (map[string]job.State, job.WorkflowState) {
	out := make(map[string]job.State, len(s.tasks))
	var succeeded, failed, canceled int
	for _, t := range s.tasks { // in order: each after its dependencies
		st := job.StateSucceeded
		if t.spec.failsByDesign() {
			st = job.StateFailed
		}
		if t.runOn == job.RunOnSuccess {
			for _, d := range t.deps {
				if out[d] != job.StateSucceeded {
					st = job.StateCanceled
				}
			}
		}
		out[t.ref] = st
		switch st {
		case job.StateSucceeded:
			succeeded++
		case job.StateFailed:
			failed++
		default:
			canceled++
		}
	}
	return out, job.WorkflowStateOf(len(s.tasks), succeeded, failed, canceled)
}

// wfSubmission is one answer to a submission of a workflow.
type wfSubmission struct {
	id      uuid.UUID
	created bool
}

// wfSubmitter sends the workflows into the store at their times.
type wfSubmitter struct {
	st *postgres.Store

	mu      sync.Mutex
	answers map[string][]wfSubmission
	tries   int // submissions that got no answer, sent again
	errs    []string
}

// openWorkflowStore opens the harness's own store on the nodes'
// database, through which it submits the workflows and reads them at
// the end.
func (h *harness) openWorkflowStore() *postgres.Store {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
	defer cancel()
	st, err := postgres.Open(ctx, h.dbURL, postgres.Options{Logger: slog.New(slog.DiscardHandler), MaxConns: 4})
	if err != nil {
		h.t.Fatalf("the harness's store: %v", err)
	}
	h.t.Cleanup(func() { _ = st.Close() })
	return st
}

func (s *wfSubmitter) run(ctx context.Context, start time.Time, specs []wfSpec) {
	type send struct {
		spec wfSpec
		at   time.Duration
	}
	var sends []send
	for _, sp := range specs {
		sends = append(sends, send{sp, sp.at})
		if sp.resubmit != 0 {
			sends = append(sends, send{sp, sp.resubmit})
		}
	}
	sort.SliceStable(sends, func(i, j int) bool { return sends[i].at < sends[j].at })
	var wg sync.WaitGroup
	for _, sd := range sends {
		if d := time.Until(start.Add(sd.at)); d > 0 {
			time.Sleep(d) // the workload's own schedule, not a synchronisation
		}
		wg.Go(func() { s.submit(ctx, sd.spec) })
	}
	wg.Wait()
}

// submit sends one workflow until an answer comes: an error that is
// not the request's (the database went away, the connection was
// terminated, no slot was left) sends it again.
func (s *wfSubmitter) submit(ctx context.Context, sp wfSpec) {
	for try := 0; ; try++ {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := s.st.WorkflowSubmit(sctx, store.WorkflowSubmitParams{WorkflowParams: sp.params()})
		cancel()
		var invalid *job.ValidationError
		switch {
		case err == nil:
			s.mu.Lock()
			s.answers[sp.key] = append(s.answers[sp.key], wfSubmission{id: res.Workflow.ID, created: res.Created})
			s.mu.Unlock()
			return
		case errors.As(err, &invalid), errors.Is(err, job.ErrIdempotencyMismatch), ctx.Err() != nil:
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Sprintf("submit workflow %s (try %d): %v", sp.key, try+1, err))
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.tries++
		s.mu.Unlock()
		time.Sleep(time.Duration(100*min(try+1, 10)) * time.Millisecond) // no answer: send it again soon
	}
}
