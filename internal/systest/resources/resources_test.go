package resources

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

// The node's limits, small so that each case takes seconds.
const (
	readTimeout      = 2 * time.Second
	writeTimeout     = 3 * time.Second
	idleTimeout      = 2 * time.Second
	maxStreams       = 8
	maxStreamsPerKey = 4
)

// The load of the cases.
const (
	pageJobs    = 200       // jobs of the page the slow readers ask for
	argsBytes   = 1_000_000 // each one's args
	slowReaders = 4
	idleConns   = 128
	slowBodies  = 16
	streamKeys  = 3 // keys that each try streamTries streams
	streamTries = 6
)

// The bounds' allowances, and what they are derived from.
const (
	// pageJobsInFlight is what a page being answered holds at most, in
	// jobs of argsBytes: httpapi reads a page in parts of 8 such jobs
	// (its listFirstPart, and listPartBytes of 8 MiB), plus the JSON of
	// the one being encoded and the row the store's driver is reading.
	pageJobsInFlight = 10
	// gcFactor: Go lets its heap grow to twice what is live before it
	// collects (GOGC=100), and the memory it freed stays resident a while.
	gcFactor = 2
	// connBytes is what one open connection may hold: its reader and
	// writer buffers (4 KiB each), its goroutine's stack and the
	// request being read.
	connBytes = 64 << 10
	// memSlack covers the runtime, the drivers' buffers and the test's
	// own reads (/metrics).
	memSlack = 48 << 20
	// fdSlack covers the test's own connection (kept alive or not) and
	// the files a store opens; the store's pool is counted apart.
	fdSlack = 8
	// goroutineSlack covers the engine's and the pools' goroutines
	// coming and going.
	goroutineSlack = 24
	// goroutinesPerConn: a connection's serving goroutine and, while a
	// handler runs, its background read.
	goroutinesPerConn = 2
)

// TestResourcesBounded: see the package's doc.
func TestResourcesBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("the resource tier runs without -short")
	}
	bin := buildJobd(t, t.TempDir())
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			database, streamJob := seed(t, driver)
			n := startNode(t, bin, database, map[string]string{
				"read-timeout": readTimeout.String(), "write-timeout": writeTimeout.String(),
				"idle-timeout": idleTimeout.String(), "max-streams": fmt.Sprint(maxStreams),
				"max-streams-per-key": fmt.Sprint(maxStreamsPerKey),
			})
			n.warmUp(t)
			var figures []figure
			for _, c := range []struct {
				name string
				run  func(t *testing.T, n *node) figure
			}{
				{"slow readers", slowReaderCase},
				{"idle connections", idleCase},
				{"slow bodies", slowBodyCase},
				{"many streams", func(t *testing.T, n *node) figure { return streamCase(t, n, streamJob) }},
			} {
				t.Run(c.name, func(t *testing.T) {
					f := c.run(t, n)
					f.name = c.name
					figures = append(figures, f)
				})
			}
			t.Logf("%s figures (jobd serve pid %d):\n%s", driver, n.cmd.Process.Pid, table(figures))
		})
	}
}

// seed makes a database of driver with pageJobs jobs of argsBytes args
// (queue bulk, which no pool works), and before them one small job
// there for the streams to follow; it returns its jobd --database and
// the small job's id.
func seed(t *testing.T, driver string) (database, streamJob string) {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	switch driver {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "jobd.db")
		database = "sqlite:" + path
		st, err = sqlite.Open(ctx, path, sqlite.Options{})
	case "postgres":
		database = migrated.NewDatabase(t)
		st, err = postgres.Open(ctx, database, postgres.Options{})
	}
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	small, err := st.JobInsertMany(ctx, []job.InsertParams{{Queue: "bulk", Kind: "small"}})
	if err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"blob":"` + strings.Repeat("x", argsBytes-len(`{"blob":""}`)) + `"}`)
	const batch = 10
	for i := 0; i < pageJobs; i += batch {
		params := make([]job.InsertParams, batch)
		for j := range params {
			params[j] = job.InsertParams{Queue: "bulk", Kind: "big", Args: args}
		}
		if _, err := st.JobInsertMany(ctx, params); err != nil {
			t.Fatal(err)
		}
	}
	return database, small[0].Job.ID.String()
}

// figure is what one case made the node hold.
type figure struct {
	name                          string
	base, held, after             sample
	peakKiB, boundKiB             int64 // peak resident memory, and its bound
	heldFDBound, heldGoroutineCap int
}

func table(figs []figure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-17s %9s %9s %9s | %5s %5s %5s %5s | %5s %5s %5s %5s\n", "case",
		"RSS MiB", "peak MiB", "bound", "fds", "held", "bound", "after", "gor.", "held", "bound", "after")
	for _, f := range figs {
		fmt.Fprintf(&b, "%-17s %9.1f %9.1f %9.1f | %5d %5d %5d %5d | %5d %5d %5d %5d\n", f.name,
			mib(f.base.rssKiB), mib(f.peakKiB), mib(f.boundKiB),
			f.base.fds, f.held.fds, f.heldFDBound, f.after.fds,
			f.base.goroutines, f.held.goroutines, f.heldGoroutineCap, f.after.goroutines)
	}
	return b.String()
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// check holds a case's figures to its bounds: its peak memory over the
// base, its connections and goroutines while held, and what is left
// once the node let go (the base, the store's pool, the slack).
func (f *figure) check(t *testing.T, conns, goroutinesPerHeld int, heldBytes int64) {
	t.Helper()
	f.boundKiB = f.base.rssKiB + (gcFactor*heldBytes+memSlack)>>10
	f.heldFDBound = f.base.fds + conns + f.base.poolMax + fdSlack
	f.heldGoroutineCap = f.base.goroutines + conns*goroutinesPerHeld + goroutineSlack
	if f.peakKiB > f.boundKiB {
		t.Errorf("peak memory %.1f MiB, over its bound %.1f MiB (%.1f MiB before)", mib(f.peakKiB), mib(f.boundKiB), mib(f.base.rssKiB))
	}
	if f.held.fds > f.heldFDBound {
		t.Errorf("%d fds held, over the bound %d", f.held.fds, f.heldFDBound)
	}
	if f.held.goroutines > f.heldGoroutineCap {
		t.Errorf("%d goroutines held, over the bound %d", f.held.goroutines, f.heldGoroutineCap)
	}
}

// released reports whether the node let go of what a case held: its
// fds and goroutines are back within the base's bounds.
func released(base, now sample) bool {
	return now.fds <= base.fds+base.poolMax+fdSlack && now.goroutines <= base.goroutines+goroutineSlack
}
