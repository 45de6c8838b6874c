package pgtest

import (
	"flag"
	"runtime"
	"strconv"
)

// maxParallel caps the default of -parallel that Main sets: past it, the
// tests' connections near the throwaway cluster's max_connections.
const maxParallel = 16

// raiseParallel makes -parallel default to four tests per CPU (at most
// maxParallel) instead of one, unless the command line sets it. The
// tests of a package that uses PostgreSQL spend most of their time
// waiting on the database and on timers, not on this process's CPU: on
// two CPUs, store/postgres runs in 33 s at eight instead of 62 s at two.
// Under the race detector, which multiplies the tests' CPU, it leaves the
// default: a CI run at four per CPU under -race starved SQLite tests of
// CPU for 17 s on this 2-CPU machine.
func raiseParallel() {
	if raceEnabled {
		return
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			set = true
		}
	})
	if set {
		return
	}
	n := min(4*runtime.GOMAXPROCS(0), maxParallel)
	_ = flag.Set("test.parallel", strconv.Itoa(n))
}
