package gateway

import "github.com/jobd/jobd/internal/testutil/testsignal"

// SweptSignal returns the signal fired after each pass of g's result TTL,
// with the number of results it removed. Initialise it before the engine
// runs.
func SweptSignal(g *Gateway) *testsignal.Signal[int] { return testsignal.Of(&g.points.swept) }
