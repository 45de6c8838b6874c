//go:build !race

package pgtest

// raceEnabled: the race detector is off (see raiseParallel).
const raceEnabled = false
