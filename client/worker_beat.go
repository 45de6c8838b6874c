package client

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// minBeat bounds how often heartbeats go.
const minBeat = 10 * time.Millisecond

// heartbeats keeps the worker online and renews its leases (those of the
// running jobs and of the outcomes on their way) until ctx ends; it
// cancels the running jobs whose lease is lost or whose cancel was
// requested.
func (w *Worker) heartbeats(ctx context.Context) {
	for {
		w.beat(ctx)
		if sleep(ctx, w.beatInterval()) != nil {
			return
		}
	}
}

// beatInterval is HeartbeatInterval, or less when a job's claim advised
// less (its HeartbeatIntervalSeconds; a third of its lease from a server
// that advises nothing).
func (w *Worker) beatInterval() time.Duration {
	d := w.cfg.HeartbeatInterval
	advice := func(j api.ClaimedJob) {
		a := time.Duration(j.HeartbeatIntervalSeconds * float64(time.Second))
		if a <= 0 {
			a = time.Duration(j.LeaseTTL) / 3
		}
		d = min(d, a)
	}
	w.mu.Lock()
	for _, r := range w.running {
		advice(r.job)
	}
	w.out.each(func(p *pending) { advice(p.job) })
	w.mu.Unlock()
	return max(d, minBeat)
}

// beat sends one heartbeat, in parts of at most api.MaxOutcomes leases
// (the server's bound of one heartbeat), and acts on its answers.
func (w *Worker) beat(ctx context.Context) {
	type lease struct {
		l   api.Lease
		ttl time.Duration
	}
	w.mu.Lock()
	var leases []lease
	for id, r := range w.running {
		leases = append(leases, lease{api.Lease{ID: id, LeaseToken: r.job.LeaseToken}, time.Duration(r.job.LeaseTTL)})
	}
	running := len(leases)
	w.out.each(func(p *pending) {
		leases = append(leases, lease{api.Lease{ID: p.job.ID, LeaseToken: p.job.LeaseToken}, time.Duration(p.job.LeaseTTL)})
	})
	w.mu.Unlock()
	status := "active"
	switch running {
	case 0:
		status = "idle"
	case w.cfg.Concurrency:
		status = "busy"
	}
	for first := true; first || len(leases) > 0; first = false {
		part := leases[:min(len(leases), api.MaxOutcomes)]
		leases = leases[len(part):]
		ls := make([]api.Lease, len(part))
		for i, l := range part {
			ls[i] = l.l
		}
		at := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		states, err := w.c.WorkerHeartbeat(cctx, status, ls)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("jobd worker: heartbeat failed", "err", err)
			}
			return
		}
		for i, s := range states {
			w.renewed(s, at.Add(part[i].ttl), part[i].l.LeaseToken)
		}
	}
}

// renewed acts on one lease's heartbeat answer: a lease still held lasts
// until expires; a running job whose lease is lost, or whose cancel was
// requested, is cancelled. An outcome on its way keeps its last expiry
// when its lease is not held: it may have been applied, and its answer
// is what tells.
func (w *Worker) renewed(s api.LeaseState, expires time.Time, token uuid.UUID) {
	w.mu.Lock()
	r := w.running[s.ID]
	if r != nil && r.job.LeaseToken != token {
		r = nil
	}
	if s.Held {
		if r != nil {
			r.expires = expires
		}
		w.out.each(func(p *pending) {
			if p.job.ID == s.ID && p.job.LeaseToken == token {
				p.expires = expires
			}
		})
	}
	w.mu.Unlock()
	switch {
	case r == nil:
	case !s.Held:
		r.cancel(ErrLeaseLost)
	case s.CancelRequested:
		r.cancel(ErrJobCanceled)
	}
}
