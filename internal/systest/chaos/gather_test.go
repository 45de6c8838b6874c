package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// evidence is what the checks judge: the workload as planned and as
// answered, the jobs and their journals as the server shows them at the
// end, and the workers' own records (the front's log of their exchanges,
// the executions they recorded).
type evidence struct {
	quiet      time.Time
	specs      []jobSpec
	answers    map[string][]submission
	submitErrs []string
	jobs       map[uuid.UUID]*jobRecord
	exchanges  []exchange
	runs       []execution
	// workerOf maps a worker's name in the front's log (a Go worker, an
	// exec worker's instance) to its registered id, the lease owner the
	// journal names.
	workerOf map[string]string
	// transitions are the database's record of every job's state
	// changes, timed by their commits.
	transitions map[uuid.UUID][]transition
	// wf are the workflows (workflow_test.go), whose tasks are among jobs.
	wf *wfEvidence
}

// jobRecord is a job at the end, with its journal.
type jobRecord struct {
	job    api.Job
	events []api.Event
}

// gather collects the evidence once every worker stopped.
func (h *harness) gather(sub *submitter, specs []jobSpec, quiet time.Time) *evidence {
	ev := &evidence{
		quiet: quiet, specs: specs, answers: sub.answers, submitErrs: sub.errs,
		jobs: make(map[uuid.UUID]*jobRecord), exchanges: h.front.exchanges(), runs: h.runs.all(),
		workerOf: make(map[string]string),
	}
	for _, g := range h.gos {
		ev.workerOf[g.who] = g.workerID
	}
	for _, w := range h.execs {
		runs, err := w.executions()
		if err != nil {
			h.errorf("the record of exec worker %d: %v", w.slot, err)
		}
		ev.runs = append(ev.runs, runs...)
		w.mu.Lock()
		for _, name := range w.names {
			ev.workerOf[name] = w.workerID
		}
		w.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Minute)
	defer cancel()
	var err error
	if ev.transitions, err = h.transitions(ctx); err != nil {
		h.errorf("the jobs' transitions: %v", err)
	}
	for _, q := range []string{queueRemoteA, queueRemoteB, queueInproc} {
		opts := client.ListOptions{Queue: q, Limit: 200}
		for {
			page, err := h.admin.List(ctx, opts)
			if err != nil {
				h.errorf("list the jobs of %s: %v", q, err)
				break
			}
			for _, j := range page.Jobs {
				ev.jobs[j.ID] = &jobRecord{job: j}
			}
			if page.NextCursor == "" {
				break
			}
			opts.Cursor = page.NextCursor
		}
	}
	ids := make(chan uuid.UUID)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for range 8 {
		wg.Go(func() {
			for id := range ids {
				events, err := h.admin.Events(ctx, id)
				mu.Lock()
				if err != nil {
					h.errorf("the journal of job %s: %v", id, err)
				}
				ev.jobs[id].events = events
				mu.Unlock()
			}
		})
	}
	for id := range ev.jobs {
		ids <- id
	}
	close(ids)
	wg.Wait()
	return ev
}

// span is one claim of a job as its journal shows it: from the claim to
// the event that ended it (succeeded, retried, failed, requeued,
// rescued, timed-out, canceled).
type span struct {
	job     uuid.UUID
	attempt int
	owner   string
	from    time.Time
	to      time.Time
	end     string // the ending event's kind; "" while open
	detail  string // the ending event's detail
}

// endKinds are the events that end a claim.
var endKinds = map[string]bool{
	"succeeded": true, "retried": true, "failed": true, "requeued": true, "rescued": true, "canceled": true,
	"timed-out": true,
}

// spans reads a job's claims from its journal, and the number of its
// succeeded events; a journal whose claims and ends do not alternate is
// an error.
func spans(j *jobRecord) (out []span, succeeded int, err error) {
	var open *span
	for _, e := range j.events {
		switch {
		case e.Kind == "claimed":
			if open != nil {
				return nil, 0, fmt.Errorf("event %d: claimed (attempt %d) while the claim of attempt %d is open", e.ID, e.Attempt, open.attempt)
			}
			open = &span{job: j.job.ID, attempt: e.Attempt, owner: e.Detail, from: e.At}
		case endKinds[e.Kind]:
			if e.Kind == "succeeded" {
				succeeded++
			}
			if open == nil {
				if e.Kind == "canceled" || e.Kind == "failed" {
					continue // of a queued job: no claim to end
				}
				return nil, 0, fmt.Errorf("event %d: %s without a claim", e.ID, e.Kind)
			}
			open.to, open.end, open.detail = e.At, e.Kind, e.Detail
			out = append(out, *open)
			open = nil
		}
	}
	if open != nil {
		out = append(out, *open)
	}
	return out, succeeded, nil
}
