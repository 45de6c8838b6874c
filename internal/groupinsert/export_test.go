package groupinsert

import "time"

// OnQueued makes g tell fn the queue's length after each Insert joins it.
func (g *Inserter) OnQueued(fn func(n int)) {
	g.mu.Lock()
	g.queued = fn
	g.mu.Unlock()
}

// SetStallAfter sets how long an insert waits behind committing batches
// before it starts another flusher.
func (g *Inserter) SetStallAfter(d time.Duration) {
	g.mu.Lock()
	g.stallAfter = d
	g.mu.Unlock()
}
