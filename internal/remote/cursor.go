package remote

import (
	"sync"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// A worker draining a backlog claims after the last job its previous
// claim of the queue took (store.ClaimParams.After), as the engine's
// pools do, rather than walking again, at each claim, past the index
// entries of every job claimed since vacuum last ran. It starts again
// from the best job when a wake-up says jobs may have come ahead of it,
// when its last claim came back short (it may have skipped jobs that
// another transaction held, or reached the end), and at least every
// cursorRestart.
const (
	// cursorRestart bounds how long a worker's claims of a queue go on
	// from a cursor before one starts from the best job again.
	cursorRestart = time.Second
	// cursorSlack is how far before the last job it took a claim starts
	// (see the engine's own): the jobs of a transaction that committed
	// after a claim may sort just before the jobs that claim took.
	cursorSlack = 250 * time.Millisecond
	// maxCursors bounds the cursors kept; past it, the old ones go.
	maxCursors = 10_000
)

// cursorKey names a worker's claims of one queue.
type cursorKey struct{ worker, queue string }

// cursorState is where a worker's next claim of a queue starts.
type cursorState struct {
	last    *store.ClaimCursor // nil: from the best job
	fromTop time.Time          // when a claim last started from the best job
	woken   bool               // a wake-up came since the last claim
}

// cursors holds the workers' cursors.
type cursors struct {
	mu sync.Mutex
	m  map[cursorKey]*cursorState
}

// after is where the next claim of k starts, at now: nil for the best
// job.
func (c *cursors) after(k cursorKey, now time.Time) *store.ClaimCursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[k]
	if st == nil || st.last == nil || st.woken || now.Sub(st.fromTop) >= cursorRestart {
		return nil
	}
	return &store.ClaimCursor{Priority: st.last.Priority, RunAt: st.last.RunAt.Add(-cursorSlack)}
}

// claimed records a claim of k that began at began, started after
// after (nil: from the best job), asked for asked jobs and took jobs.
func (c *cursors) claimed(k cursorKey, began time.Time, after *store.ClaimCursor, asked int, jobs []*job.Job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[cursorKey]*cursorState)
	}
	st := c.m[k]
	if st == nil {
		if len(c.m) >= maxCursors {
			for key, s := range c.m {
				if began.Sub(s.fromTop) >= cursorRestart {
					delete(c.m, key)
				}
			}
		}
		st = &cursorState{}
		c.m[k] = st
	}
	if after == nil {
		st.fromTop = began
	}
	st.woken = false
	switch {
	case len(jobs) < asked:
		st.last = nil // short: start from the best job next time
	default:
		st.last = store.CursorOf(jobs[len(jobs)-1])
	}
}

// wake records a wake-up of queue ("" for any): the next claims of it
// start from the best job.
func (c *cursors) wake(queue string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, st := range c.m {
		if queue == "" || k.queue == queue {
			st.woken = true
		}
	}
}
