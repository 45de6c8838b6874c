package engine

import (
	"sync"
	"testing"
	"time"
)

// Every function handed to run starts at once, however many are still
// running, and runs once; after stop, functions still run.
func TestGoroutinesRunEachFunctionOnceAndAtOnce(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	g := newGoroutines(stop)
	const n = 50
	var mu sync.Mutex
	ran := make(map[int]int)
	for round := range 3 {
		started := make(chan int, n)
		release := make(chan struct{})
		var done sync.WaitGroup
		for i := range n {
			done.Add(1)
			id := round*n + i
			g.run(func() {
				defer done.Done()
				mu.Lock()
				ran[id]++
				mu.Unlock()
				started <- id
				<-release
			})
		}
		// All n run together: none waits for another to return.
		for range n {
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a function did not start while the others ran", round)
			}
		}
		close(release)
		done.Wait()
		if round == 1 {
			close(stop)
		}
	}
	for id := range 3 * n {
		if ran[id] != 1 {
			t.Errorf("function %d ran %d times, want once", id, ran[id])
		}
	}
}
