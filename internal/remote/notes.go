package remote

import (
	"context"
	"sync"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// The Service remembers each claim, in memory, until its outcome
// arrives, so that the outcome is counted under the job's queue and kind,
// its run time measured from the claim, and its span made (from the claim
// to the outcome) without a read of the job. An outcome sent to another
// node than the claim's, or after a restart, is counted from the job read
// back, without a run time.
const (
	// maxClaimNotes bounds the claims remembered at once.
	maxClaimNotes = 100_000
	// staleClaimNote is the age past which a note may be dropped to make
	// room: its lease has surely been renewed by then, or lost.
	staleClaimNote = time.Hour
)

// claimNote is one remembered claim.
type claimNote struct {
	job *job.Job // ID, Queue, Kind, Attempt and TraceParent only
	at  time.Time
	rec observe.KindRecorder
}

// claimNotes holds the claims not finished yet, by lease.
type claimNotes struct {
	mu sync.Mutex
	m  map[store.Lease]claimNote
}

// noteKey is the key of a claim's note: its job and token (the owner
// an outcome names is checked by the store, not here).
func noteKey(l store.Lease) store.Lease { return store.Lease{ID: l.ID, Token: l.Token} }

func (c *claimNotes) put(l store.Lease, n claimNote) {
	l = noteKey(l)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[store.Lease]claimNote)
	}
	if len(c.m) >= maxClaimNotes {
		for k, v := range c.m {
			if n.at.Sub(v.at) > staleClaimNote {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxClaimNotes {
			return // the outcome will be counted from the job read back
		}
	}
	c.m[l] = n
}

func (c *claimNotes) take(l store.Lease) (claimNote, bool) {
	l = noteKey(l)
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.m[l]
	delete(c.m, l)
	return n, ok
}

// claimed records the jobs a remote worker claimed.
func (s *Service) claimed(jobs []*job.Job) {
	if len(jobs) == 0 {
		return
	}
	now := s.clock.Now()
	for _, j := range jobs {
		rec := s.cfg.Jobs.Kind(j.Queue, j.Kind)
		rec.Started(now.Sub(j.RunAt))
		brief := &job.Job{ID: j.ID, Queue: j.Queue, Kind: j.Kind, Attempt: j.Attempt, TraceParent: j.TraceParent}
		s.claims.put(store.Lease{ID: j.ID, Token: j.LeaseToken}, claimNote{job: brief, at: now, rec: rec})
	}
}

// finished records a remote worker's outcome, written (res) or not.
func (s *Service) finished(ctx context.Context, out store.Outcome, res store.FinishResult) {
	now := s.clock.Now()
	o := observe.OutcomeOf(res.State, out.Status, res.Lost)
	throttled := out.Throttle > 0 && !res.Lost && res.State == job.StateQueued
	n, ok := s.claims.take(out.Lease)
	if !ok {
		if res.Lost {
			return
		}
		j, err := s.store.JobGet(ctx, out.ID)
		if err != nil {
			return
		}
		s.cfg.Jobs.Kind(j.Queue, j.Kind).Finished(o, -1)
		if throttled {
			s.cfg.Jobs.Throttled(j.Queue)
		}
		return
	}
	n.rec.Finished(o, now.Sub(n.at))
	if throttled {
		s.cfg.Jobs.Throttled(n.job.Queue)
	}
	_, span := s.cfg.Tracer.StartJob(ctx, n.job, n.at)
	span.End(o, out.Error, now)
}
