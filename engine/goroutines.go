package engine

// goroutines runs the handlers of claimed jobs on goroutines it keeps
// between jobs. A new goroutine starts with a small stack, which a
// handler's first calls grow by copying it whole; in a busy queue that
// copy, and starting the goroutine, cost a fifth of the engine's CPU (CPU
// profile of a 1 000 000-job backlog: copystack 13 %, newproc 7 %). A
// goroutine that ran a job keeps its stack for the next one. There are
// never more of them than jobs ran here at once; they end when stop is
// closed and they are idle.
type goroutines struct {
	// next hands a function to an idle goroutine; unbuffered, so a send
	// succeeds only when one is waiting.
	next chan func()
	stop <-chan struct{}
}

func newGoroutines(stop <-chan struct{}) *goroutines {
	return &goroutines{next: make(chan func()), stop: stop}
}

// run calls f on an idle goroutine, or on a new one when none is idle.
func (g *goroutines) run(f func()) {
	select {
	case g.next <- f:
	default:
		go g.loop(f)
	}
}

// loop calls f, then each function handed to it, until stop is closed
// while it waits.
func (g *goroutines) loop(f func()) {
	for {
		f()
		select {
		case f = <-g.next:
		case <-g.stop:
			return
		}
	}
}
