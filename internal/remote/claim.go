package remote

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Claim is what a worker asks of a claim.
type Claim struct {
	// Queues are claimed from in order: 1 to MaxClaimQueues, none of
	// jobd's own, and, for a worker registered with queues, only those.
	Queues []string
	// Max is how many jobs at most, 1 to MaxClaimJobs; 0 means 1.
	Max int
	// Wait long-polls up to this long when no job is ready, at most
	// MaxClaimWait; 0 answers at once.
	Wait time.Duration
}

// Check refuses a claim out of bounds (422 naming the field) or naming a
// queue the worker may not claim from (403 naming queues), before
// anything is claimed or written. It fills Max's default.
func (c *Claim) Check(w *store.Worker) error {
	if len(c.Queues) == 0 || len(c.Queues) > MaxClaimQueues {
		return job.Invalid("queues", "list 1 to %d queues", MaxClaimQueues)
	}
	if c.Max == 0 {
		c.Max = 1
	}
	if c.Max < 0 || c.Max > MaxClaimJobs {
		return job.Invalid("max", "must be between 1 and %d, got %d", MaxClaimJobs, c.Max)
	}
	if c.Wait < 0 || c.Wait > MaxClaimWait {
		return job.Invalid("wait", "must be between 0s and %s, got %s", MaxClaimWait, c.Wait)
	}
	return checkClaimQueues(w, c.Queues)
}

// checkClaimQueues refuses a claim naming a queue of jobd's own, which no
// worker claims from, or one outside the worker's queues: 403 naming
// queues.
func checkClaimQueues(w *store.Worker, queues []string) error {
	for _, q := range queues {
		if job.ReservedQueue(q) {
			return forbidden("queues", "queue %q is one of jobd's own: no remote worker claims from it", q)
		}
		if !w.Queues.Allows(q) {
			return forbidden("queues", "worker %s may claim only from the queues %s, not %q", w.ID, strings.Join(w.Queues, ", "), q)
		}
	}
	return nil
}

// longPollRecheck is the safety net of a long-polling claim of queues
// none of which is paced.
const longPollRecheck = time.Second

// Claim claims up to c.Max jobs of c.Queues for worker w (Claim.Check
// first). With a wait and no job ready, it long-polls: it claims again
// each time the policy says one of the queues may have jobs, after the
// pacing delay of a limited or throttled queue (Policy.ClaimPace), and
// once more when the wait ends. A claim records a sign of life of the
// worker.
func (s *Service) Claim(ctx context.Context, w *store.Worker, c Claim) ([]*job.Job, error) {
	if err := c.Check(w); err != nil {
		return nil, err
	}
	if err := s.claimSeen(ctx, w); err != nil {
		return nil, err
	}
	// A wake-up of a queue sends the next claims of it back to its best
	// job (cursors), for as long as the Service lives.
	s.watchWakeups.Do(func() { s.policy.Subscribe(s.cursors.wake) })
	// Subscribe before the first claim, so that no wake-up falls between.
	wake := make(chan struct{}, 1)
	if c.Wait > 0 {
		unsubscribe := s.policy.Subscribe(func(queue string) {
			if queue == "" || slices.Contains(c.Queues, queue) {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		})
		defer unsubscribe()
	}
	var deadline <-chan time.Time
	if c.Wait > 0 {
		t := s.clock.NewTimer(c.Wait)
		defer t.Stop()
		deadline = t.C()
	}
	var pace clock.Timer
	defer func() {
		if pace != nil {
			pace.Stop()
		}
	}()
	for {
		jobs, err := s.claimOnce(ctx, w, c)
		s.claimed(jobs)
		if err != nil {
			return nil, err
		}
		if len(jobs) > 0 || deadline == nil {
			return jobs, nil
		}
		var paced <-chan time.Time
		// Without a pacing delay, a safety net: a claim again each
		// second, as a node polls its idle queues, for what no wake-up
		// announces (a claim that a node's stale view of newly limited
		// queues refused; see store.QueueStore.QueueSetLimits).
		if d := cmp.Or(s.claimPace(c.Queues), longPollRecheck); d > 0 {
			if pace == nil {
				pace = s.clock.NewTimer(d)
			} else {
				pace.Reset(d)
			}
			paced = pace.C()
		}
		select {
		case <-wake:
		case <-paced:
		case <-deadline:
			deadline = nil // one last claim, then answer
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// claimPace is the soonest pacing delay of queues: 0 when none of them is
// limited or throttled.
func (s *Service) claimPace(queues []string) time.Duration {
	var d time.Duration
	for _, q := range queues {
		if p := s.policy.ClaimPace(q); p > 0 && (d == 0 || p < d) {
			d = p
		}
	}
	return d
}

// claimOnce claims up to c.Max jobs over c.Queues, in order. The claims
// of several queues run in one transaction: when one fails, those before
// it are undone with it, so that no job is left leased to a worker that
// was never told of it.
func (s *Service) claimOnce(ctx context.Context, w *store.Worker, c Claim) ([]*job.Job, error) {
	if len(c.Queues) == 1 {
		return s.claimQueues(ctx, s.store, w, c)
	}
	var jobs []*job.Job
	err := s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		var err error
		jobs, err = s.claimQueues(ctx, ex, w, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// claimQueues claims through ex up to c.Max jobs over c.Queues, in order,
// and stops at the first error.
func (s *Service) claimQueues(ctx context.Context, ex store.Executor, w *store.Worker, c Claim) ([]*job.Job, error) {
	var jobs []*job.Job
	for _, q := range c.Queues {
		n := c.Max - len(jobs)
		if n <= 0 {
			break
		}
		k := cursorKey{worker: w.ID, queue: q}
		began := s.clock.Now()
		after := s.cursors.after(k, began)
		got, err := ex.JobClaim(ctx, store.ClaimParams{
			Queue: q, Max: n, Owner: w.ID, WorkerID: w.ID, After: after,
			Capabilities: w.Capabilities, PreferWindow: s.cfg.PreferWindow, DefaultTimeout: s.policy.QueueTimeout(q),
		})
		if err != nil {
			return nil, fmt.Errorf("claim from queue %q: %w", q, err)
		}
		s.cursors.claimed(k, began, after, n, got)
		jobs = append(jobs, got...)
	}
	return jobs, nil
}
