//go:build !race

package pgprod

// raceEnabled: the test binary was built with -race, and so is the jobd
// binary it builds.
const raceEnabled = false
