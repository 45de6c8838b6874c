package groupinsert

// OnQueued makes g tell fn the queue's length after each Insert joins it.
func (g *Inserter) OnQueued(fn func(n int)) {
	g.mu.Lock()
	g.queued = fn
	g.mu.Unlock()
}
