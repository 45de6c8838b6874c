package postgres

import (
	"slices"
	"sync"
	"time"

	"github.com/jobd/jobd/flow"
)

// limitedReload is how old a node's list of the limited queues may grow
// before a claim that follows a short one reads it again.
const limitedReload = time.Second

// limitedQueues is a node's view of which queues are limited
// (flow.Limits.Limited), whose claims take the limited path: the queue's
// lock, then claim_limited.sql. Every other queue is claimed by claim.sql,
// whose probe of the queue's settings claims nothing from a limited queue:
// a view that missed a queue becoming limited is safe at once, only slow
// to claim from it. The view is read again, in the round trip of a claim
// (no round trip of its own, no goroutine), when a claim came back short
// since it was last read and it is limitedReload old by the store's
// clock; a busy queue whose claims come back full never pays for it. A
// view that still lists a queue no longer limited is corrected by the
// queue's next claim, whose lock says so.
//
// It also knows which limited queues count their running jobs (a
// global_limit or a partition_limit): a job that leaves the running state
// in one of those makes room that claimers of the queue, on any node, may
// be waiting for, and the finish that writes it wakes them
// (countedQueues). The view is exact enough for that: the node that
// finishes a job of a queue has claimed from it (its claims keep the view
// of the queue fresh, each limited claim's lock reads it), and a wake-up
// it misses only leaves the waiting claimers to their pacing delay.
type limitedQueues struct {
	mu sync.Mutex
	// names holds the limited queues, each true when it counts its
	// running jobs.
	names map[string]bool
	// counted is the names that count, for the finishes to read: a
	// slice replaced (never changed in place) when they change.
	counted []string
	readAt  time.Time // zero: never read
	// short: a claim came back with fewer jobs than it asked for since
	// the view was read (a queue may have become limited).
	short bool
}

// limitedQueue is one row of flow_limited.sql.
type limitedQueue struct {
	name string
	// counted: the queue has a global_limit or a partition_limit.
	counted bool
}

// counts reports whether limits count a queue's running jobs: a job that
// leaves the running state then makes room for another.
func counts(l flow.Limits) bool {
	return l.GlobalLimit > 0 || l.PartitionLimit > 0
}

func newLimitedQueues() *limitedQueues {
	return &limitedQueues{names: make(map[string]bool), counted: []string{}}
}

// route reports whether queue's claims take the limited path, and
// whether the claim should read the list of limited queues again (it is
// then marked read at now, so that concurrent claims do not all read it).
func (c *limitedQueues) route(queue string, now time.Time) (limited, reload bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reload = c.readAt.IsZero() || (c.short && now.Sub(c.readAt) >= limitedReload)
	if reload {
		c.readAt, c.short = now, false
	}
	_, limited = c.names[queue]
	return limited, reload
}

// read replaces the view with the queues a claim read.
func (c *limitedQueues) read(queues []limitedQueue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.names)
	for _, q := range queues {
		c.names[q.name] = q.counted
	}
	c.recount()
}

// set records what this node learnt of one queue: its claim's lock or its
// new limits.
func (c *limitedQueues) set(queue string, limited, counted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	was, known := c.names[queue]
	if limited {
		c.names[queue] = counted
	} else {
		delete(c.names, queue)
	}
	if was != counted || known != limited {
		c.recount()
	}
}

// recount rebuilds counted from names; c.mu is held.
func (c *limitedQueues) recount() {
	counted := []string{}
	for name, n := range c.names {
		if n {
			counted = append(counted, name)
		}
	}
	slices.Sort(counted)
	if !slices.Equal(counted, c.counted) {
		c.counted = counted
	}
}

// countedQueues returns the limited queues that count their running jobs,
// which a finish wakes when one of their jobs leaves the running state
// (finish_succeeded.sql, set_state_if_running.sql). The caller must not
// change the slice.
func (c *limitedQueues) countedQueues() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counted
}

// claimedShort notes a claim that came back with fewer jobs than it asked for.
func (c *limitedQueues) claimedShort() {
	c.mu.Lock()
	c.short = true
	c.mu.Unlock()
}
