//go:build race

package chaos

// raceEnabled: the test binary was built with -race, and so is the jobd
// binary it builds (which then reuses the packages the race build of the
// tests compiled).
const raceEnabled = true
