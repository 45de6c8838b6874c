package observe

import "sync/atomic"

// Point is a place in jobd's code that hands each value passing it to a
// function attached from outside: a node's maintenance pass done, an
// outcome refused for a lost lease, a server listening. Its zero value is
// inert: Report costs one atomic load until Attach. jobd's own tests
// attach to its points to wait for the code to get somewhere instead of
// sleeping or reading logs.
type Point[T any] struct {
	fn atomic.Pointer[func(T)]
}

// Attach makes fn receive every value reported from now on, in place of
// the function attached before. fn runs on the reporting goroutine: it
// must not block.
func (p *Point[T]) Attach(fn func(T)) { p.fn.Store(&fn) }

// Report hands v to the attached function, if any.
func (p *Point[T]) Report(v T) {
	if fn := p.fn.Load(); fn != nil {
		(*fn)(v)
	}
}
