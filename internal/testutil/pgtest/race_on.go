//go:build race

package pgtest

// raceEnabled: the race detector is on (see raiseParallel).
const raceEnabled = true
