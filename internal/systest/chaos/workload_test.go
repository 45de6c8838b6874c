package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// The queues of the run: the remote workers claim the remote queues
// (see goQueues; the exec workers B then A), the nodes' own pools the
// inproc one. One small set of lock keys spans all three, so that a key is
// contended between remote workers and nodes alike.
const (
	queueRemoteA = "remote-a"
	queueRemoteB = "remote-b"
	queueInproc  = "inproc"
)

// lockKeys is how many lock keys the jobs share: few, so that contention
// is real.
const lockKeys = 4

// The modes of a job: what its handler does (the exec workers' script,
// the Go workers' runJob, the nodes' built-in sleep kind).
const (
	modeOK      = "ok"      // succeeds after ms
	modeFlaky   = "flaky"   // fails its first attempt, retryably
	modeSlow    = "slow"    // runs past its lease: only heartbeats keep it
	modeDoomed  = "doomed"  // fails for good at once: ends failed
	modeExhaust = "exhaust" // fails every attempt, retryably: ends failed after max_attempts
)

// chaosKind is the remote jobs' kind.
const chaosKind = "chaos"

// jobArgs are a remote job's args.
type jobArgs struct {
	Mode string `json:"mode"`
	MS   int    `json:"ms"`
}

// jobSpec is one job of the workload, drawn from the seed.
type jobSpec struct {
	key   string        // its idempotency key, which names it
	at    time.Duration // when it is submitted, from the start of the run
	queue string
	mode  string
	ms    int
	lock  string
	// resubmit, when not 0, is when the same request is sent again (the
	// idempotency key must answer with the same job); twin sends it twice
	// at once from the start.
	resubmit time.Duration
	twin     bool
}

// failsByDesign reports whether the job is meant to end failed.
func (s jobSpec) failsByDesign() bool { return s.mode == modeDoomed || s.mode == modeExhaust }

// request is the job's submission.
func (s jobSpec) request() api.SubmitRequest {
	req := api.SubmitRequest{
		Queue: s.queue, IdempotencyKey: s.key, LockKey: s.lock,
		LeaseTTL: api.Duration(leaseTTL), MaxAttempts: 50,
	}
	if s.mode == modeExhaust {
		req.MaxAttempts = 2
	}
	if s.queue != queueInproc {
		req.Kind = chaosKind
		req.Args, _ = json.Marshal(jobArgs{Mode: s.mode, MS: s.ms})
		return req
	}
	// The nodes' built-in sleep kind: fail_attempts for the failing
	// modes, an ms it refuses for good for the doomed one.
	args := map[string]int{"ms": s.ms}
	switch s.mode {
	case modeFlaky:
		args["fail_attempts"] = 1
	case modeExhaust:
		args["fail_attempts"] = 99
	case modeDoomed:
		args["ms"] = -1
	}
	req.Kind = "sleep"
	req.Args, _ = json.Marshal(args)
	return req
}

// planWorkload draws the run's jobs from the seed: cfg.rate a second
// over the fault window.
func planWorkload(cfg config) []jobSpec {
	rng := rand.New(rand.NewPCG(cfg.seed, 2))
	n := int(cfg.rate * cfg.window.Seconds())
	specs := make([]jobSpec, n)
	for i := range specs {
		s := jobSpec{
			key: fmt.Sprintf("chaos-%d-%d", cfg.seed, i),
			at:  time.Duration(rng.Int64N(int64(cfg.window))),
		}
		switch r := rng.Float64(); {
		case r < 0.35:
			s.queue = queueRemoteA
		case r < 0.70:
			s.queue = queueRemoteB
		default:
			s.queue = queueInproc
		}
		switch r := rng.Float64(); {
		case r < 0.82:
			s.mode = modeOK
			if rng.Float64() < 0.3 {
				s.ms = 1 + rng.IntN(100)
			}
		case r < 0.92:
			s.mode, s.ms = modeFlaky, rng.IntN(20)
		case r < 0.95:
			s.mode, s.ms = modeDoomed, rng.IntN(20)
		case r < 0.98:
			s.mode, s.ms = modeExhaust, rng.IntN(20)
		default:
			s.mode, s.ms = modeSlow, int((leaseTTL + time.Second).Milliseconds())
		}
		if rng.Float64() < 0.3 {
			s.lock = fmt.Sprintf("k%d", rng.IntN(lockKeys))
		}
		switch r := rng.Float64(); {
		case r < 0.10:
			s.resubmit = s.at + time.Duration(500+rng.IntN(4500))*time.Millisecond
		case r < 0.12:
			s.twin = true
		}
		specs[i] = s
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].at < specs[j].at })
	return specs
}

// submission is one answer to a submission of a spec.
type submission struct {
	id      uuid.UUID
	created bool
}

// submitter sends the workload through the front, at its times, from a
// few goroutines; a submission that got no answer (a node died under it)
// is sent again with its idempotency key until one comes. The client
// itself retries the 503s.
type submitter struct {
	c *client.Client

	mu      sync.Mutex
	answers map[string][]submission
	errs    []string
	last    time.Time // the last answer's
}

func (s *submitter) run(ctx context.Context, start time.Time, specs []jobSpec) {
	type send struct {
		spec jobSpec
		at   time.Duration
	}
	var sends []send
	for _, sp := range specs {
		sends = append(sends, send{sp, sp.at})
		if sp.twin {
			sends = append(sends, send{sp, sp.at})
		}
		if sp.resubmit != 0 {
			sends = append(sends, send{sp, sp.resubmit})
		}
	}
	sort.SliceStable(sends, func(i, j int) bool { return sends[i].at < sends[j].at })
	work := make(chan jobSpec)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for sp := range work {
				s.submit(ctx, sp)
			}
		})
	}
	for _, sd := range sends {
		if d := time.Until(start.Add(sd.at)); d > 0 {
			time.Sleep(d) // the workload's own schedule, not a synchronisation
		}
		work <- sd.spec
	}
	close(work)
	wg.Wait()
}

// submit sends one spec until an answer comes.
func (s *submitter) submit(ctx context.Context, sp jobSpec) {
	for try := 0; ; try++ {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		j, created, err := s.c.Submit(sctx, sp.request())
		cancel()
		if err == nil {
			s.mu.Lock()
			s.answers[sp.key] = append(s.answers[sp.key], submission{id: j.ID, created: created})
			s.last = time.Now()
			s.mu.Unlock()
			return
		}
		if !client.IsRetryable(err) || ctx.Err() != nil {
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Sprintf("submit %s (try %d): %v", sp.key, try+1, err))
			s.mu.Unlock()
			return
		}
		time.Sleep(time.Duration(100*min(try+1, 10)) * time.Millisecond) // no answer: send it again soon
	}
}
