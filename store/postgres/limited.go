package postgres

import (
	"sync"
	"time"
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
type limitedQueues struct {
	mu     sync.Mutex
	names  map[string]bool
	readAt time.Time // zero: never read
	// short: a claim came back with fewer jobs than it asked for since
	// the view was read (a queue may have become limited).
	short bool
}

func newLimitedQueues() *limitedQueues {
	return &limitedQueues{names: make(map[string]bool)}
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
	return c.names[queue], reload
}

// read replaces the view with the names a claim read.
func (c *limitedQueues) read(names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.names)
	for _, n := range names {
		c.names[n] = true
	}
}

// set records what this node learnt of one queue: its claim's lock or its
// new limits.
func (c *limitedQueues) set(queue string, limited bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limited {
		c.names[queue] = true
	} else {
		delete(c.names, queue)
	}
}

// claimedShort notes a claim that came back with fewer jobs than it asked for.
func (c *limitedQueues) claimedShort() {
	c.mu.Lock()
	c.short = true
	c.mu.Unlock()
}
