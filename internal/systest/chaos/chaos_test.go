package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/testutil/pgtest"
)

// The shape of the run.
const (
	nodeCount = 3
	execCount = 3 // `jobd worker --exec` slots, 3 jobs at once each
	goCount   = 3 // Go SDK workers, 4 jobs at once each

	// leaseTTL is every job's lease: short, so that a holder that died
	// loses its jobs within seconds.
	leaseTTL = 4 * time.Second
	// reaperInterval: every node takes expired leases back this often.
	reaperInterval = time.Second
	// nodeHeartbeat renews the leases of the nodes' own jobs.
	nodeHeartbeat = 500 * time.Millisecond

	// quietSlack is the slack of the one timing bound the tier asserts:
	// once the last fault ended (its node serving again, the database
	// answering), every claim made before then ends (its job finished,
	// retried, released or rescued) within leaseTTL + reaperInterval +
	// quietSlack. A holder that died let its lease expire at most leaseTTL
	// after its last renewal, and a reaper finds it within
	// reaperInterval; the slack covers the rest: a slow job claimed just
	// before (modeSlow runs leaseTTL + 1s), a rescue's own statement, the
	// node that restarted last catching up, and above all this machine,
	// 2 vCPUs shared by the test process (built with -race), three nodes
	// (-race too), the workers and PostgreSQL, where a process may get no
	// CPU for seconds. The figures print how close each run came.
	quietSlack = 15 * time.Second

	adminSecret = "chaos-admin-secret"
)

// The run's defaults: the short run of CI (`go test ./...`), sized for
// a loaded 2-vCPU machine running the tests with -race.
const (
	defaultWindow = 30 * time.Second
	jobsPerSecond = 35
)

// goQueues are the queues of each Go worker: one queue, the other, or
// both (a claim over several queues is one transaction; a claim of one
// queue retries itself when it loses a race for a lock_key). The exec
// workers claim both.
var goQueues = [][]string{{queueRemoteA}, {queueRemoteB}, {queueRemoteA, queueRemoteB}}

// config is one run's: its seed, length and load, from the environment
// (JOBD_CHAOS_SEED, JOBD_CHAOS_DURATION, JOBD_CHAOS_RATE).
type config struct {
	seed   uint64
	window time.Duration // how long jobs are submitted and faults injected
	rate   float64       // jobs submitted a second
}

func loadConfig(t *testing.T) config {
	t.Helper()
	cfg := config{seed: rand.Uint64(), window: defaultWindow, rate: jobsPerSecond}
	if v := os.Getenv("JOBD_CHAOS_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("JOBD_CHAOS_SEED=%q: %v", v, err)
		}
		cfg.seed = seed
	}
	if v := os.Getenv("JOBD_CHAOS_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			t.Fatalf("JOBD_CHAOS_RATE=%q: want jobs a second, above 0", v)
		}
		cfg.rate = r
	}
	if v := os.Getenv("JOBD_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 20*time.Second {
			t.Fatalf("JOBD_CHAOS_DURATION=%q: want a Go duration of at least 20s", v)
		}
		cfg.window = d
	}
	return cfg
}

// harness is the system under test and what drives it.
type harness struct {
	t   *testing.T
	cfg config
	// ctx ends when the test does.
	ctx context.Context
	// dir holds the binary, the logs and the exec workers' records; it is
	// kept when the test fails, or when JOBD_CHAOS_KEEP is set.
	dir    string
	jobd   string
	script string

	pg    *pgtest.Cluster
	db    *database
	dbURL string // the nodes'

	procs    processes
	nodes    []*node
	front    *front
	proxyURL string
	admin    *client.Client // the harness's own calls, through the front

	execs []*execWorker
	gos   []*goWorker
	runs  runLog

	logMu      sync.Mutex
	workerLogs *os.File

	errMu  sync.Mutex
	errors int // errorf's calls
	// collect, when set, receives errorf's failures instead of the test
	// (the checks' own tests, which feed them evidence that must fail).
	collect func(string)
}

// maxErrors bounds the failures a run prints; the rest are counted.
const maxErrors = 100

// errorf fails the test with the seed in the message.
func (h *harness) errorf(format string, args ...any) {
	h.t.Helper()
	h.errMu.Lock()
	h.errors++
	n := h.errors
	h.errMu.Unlock()
	if h.collect != nil {
		h.collect(fmt.Sprintf(format, args...))
		return
	}
	switch {
	case n <= maxErrors:
		h.t.Errorf("chaos (seed %d): %s", h.cfg.seed, fmt.Sprintf(format, args...))
	case n == maxErrors+1:
		h.t.Errorf("chaos (seed %d): more failures, not shown (their number is in the figures)", h.cfg.seed)
	}
}

// workerLogger is the Go worker who's logger, into the run's directory.
func (h *harness) workerLogger(who string) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{&h.logMu, h.workerLogs}, nil)).With("worker", who)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *os.File
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// newHarness builds jobd, starts the database, the nodes, the front and
// the workers.
func newHarness(t *testing.T, cfg config) *harness {
	t.Helper()
	dir, err := os.MkdirTemp("", "jobd-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("JOBD_CHAOS_KEEP") != "" {
			t.Logf("chaos: the logs and records of the run are kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, cfg: cfg, ctx: ctx, dir: dir}
	t.Cleanup(func() {
		cancel()
		for _, g := range h.gos {
			g.stop()
		}
		h.procs.killAll()
	})
	if h.workerLogs, err = os.Create(filepath.Join(dir, "go-workers.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.workerLogs.Close() })
	h.script = filepath.Join(dir, "job.sh")
	if err := os.WriteFile(h.script, []byte(jobScript), 0o644); err != nil {
		t.Fatal(err)
	}
	h.jobd = buildJobd(t, dir)

	// Commit timestamps time the database's record of the transitions
	// (transitions_test.go); fewer slots make the exhaustion quicker to
	// reach.
	h.pg = pgtest.NewCluster(t, "track_commit_timestamp=on", "max_connections=100")
	h.dbURL = setupDatabase(t, h.pg)
	jobdURL, _ := url.Parse(h.pg.URL())
	jobdURL.Path = "/" + nodeDatabase
	h.db = &database{url: h.pg.URL(), jobdURL: jobdURL.String()}

	addrs := make([]string, nodeCount)
	for i := range nodeCount {
		h.nodes = append(h.nodes, newNode(h, i))
		addrs[i] = h.nodes[i].addr
	}
	// The first node migrates the schema alone; the others start at once.
	startCtx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	if err := h.nodes[0].start(startCtx); err != nil {
		t.Fatal(err)
	}
	h.recordTransitions()
	errs := make(chan error, nodeCount)
	for _, n := range h.nodes[1:] {
		go func() { errs <- n.start(startCtx) }()
	}
	for range nodeCount - 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	h.front = newFront(addrs)
	h.proxyURL = h.front.serveProxy(t)
	if h.admin, err = client.New("http://jobd.chaos", adminSecret, client.WithHTTPClient(h.front.client("harness"))); err != nil {
		t.Fatal(err)
	}
	for i := range execCount {
		created, err := h.admin.CreateWorker(startCtx, api.WorkerRequest{Name: fmt.Sprintf("exec-%d", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		w := &execWorker{h: h, slot: i + 1, workerID: created.WorkerID, key: created.APIKey,
			log: filepath.Join(dir, fmt.Sprintf("exec-%d.log", i+1))}
		if err := w.start(); err != nil {
			t.Fatal(err)
		}
		h.execs = append(h.execs, w)
	}
	for i := range goCount {
		who := fmt.Sprintf("go-%d", i+1)
		created, err := h.admin.CreateWorker(startCtx, api.WorkerRequest{Name: who})
		if err != nil {
			t.Fatal(err)
		}
		g, err := newGoWorker(h, who, created.WorkerID, created.APIKey, goQueues[i%len(goQueues)])
		if err != nil {
			t.Fatal(err)
		}
		h.gos = append(h.gos, g)
	}
	return h
}

// TestChaos: see the package's documentation.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos tier runs without -short")
	}
	cfg := loadConfig(t)
	t.Logf("chaos: seed %d, %s of faults and load at %g jobs/s (replay: JOBD_CHAOS_SEED=%d JOBD_CHAOS_DURATION=%s JOBD_CHAOS_RATE=%g)",
		cfg.seed, cfg.window, cfg.rate, cfg.seed, cfg.window, cfg.rate)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos: FAILED with seed %d; replay the same faults and jobs with JOBD_CHAOS_SEED=%d JOBD_CHAOS_DURATION=%s JOBD_CHAOS_RATE=%g",
				cfg.seed, cfg.seed, cfg.window, cfg.rate)
		}
	})
	began := time.Now()
	h := newHarness(t, cfg)
	plan, specs, wfSpecs := planFaults(cfg), planWorkload(cfg), planWorkflows(cfg)
	wfSub := &wfSubmitter{st: h.openWorkflowStore(), answers: make(map[string][]wfSubmission)}
	ready := time.Now()

	sub := &submitter{answers: make(map[string][]submission)}
	var err error
	if sub.c, err = client.New("http://jobd.chaos", adminSecret, client.WithHTTPClient(h.front.client("client"))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		var wg sync.WaitGroup
		wg.Go(func() { wfSub.run(h.ctx, start, wfSpecs) })
		sub.run(h.ctx, start, specs)
		wg.Wait()
	}()
	in := &injector{h: h}
	in.run(start, plan)
	injections := in.injections()
	var quiet time.Time // the last fault's end: its recovery done
	for _, r := range injections {
		if r.end.After(quiet) {
			quiet = r.end
		}
		if r.err != nil {
			h.errorf("fault %s (target %d) at %s: %v", r.kind, r.target, r.at, r.err)
		}
	}
	<-submitted
	drained, drain := h.waitDrained()

	// The workers stop gracefully: nothing runs any more.
	for _, g := range h.gos {
		g.stop()
		if err := <-g.done; err != nil {
			h.errorf("%s: Run: %v", g.who, err)
		}
	}
	for _, w := range h.execs {
		if stopped, err := w.current().stop(30 * time.Second); !stopped || err != nil {
			h.errorf("%s at the end: %v", w.name(), err)
		}
	}
	ev := h.gather(sub, specs, quiet)
	ev.wf = h.gatherWorkflows(wfSub.st, wfSub, wfSpecs)
	checked := ev.check(h)
	for _, n := range h.nodes {
		if err := n.stop(); err != nil {
			h.errorf("%v", err)
		}
	}
	figures{
		cfg: cfg, began: began, ready: ready, start: start, quiet: quiet, submitted: sub.last,
		drained: drained, injections: injections, ev: ev, checked: checked, nodes: h.nodes, drain: drain,
		failures: h.failures(),
	}.log(t)
}

// drainSample is how many jobs were queued or running at a moment of
// the drain.
type drainSample struct {
	at     time.Time
	active int64
}

// failures returns how often errorf was called.
func (h *harness) failures() int {
	h.errMu.Lock()
	defer h.errMu.Unlock()
	return h.errors
}

// waitDrained waits until no job is queued or running (the test's
// deadline, less room for the checks, bounds the wait: draining is
// the tier's liveness check) and returns when that was seen, with a
// sample of the count each second.
func (h *harness) waitDrained() (time.Time, []drainSample) {
	limit := time.Now().Add(10 * time.Minute)
	if d, ok := h.t.Deadline(); ok {
		limit = d.Add(-2 * time.Minute)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var samples []drainSample
	for time.Now().Before(limit) {
		ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
		n, err := h.admin.Count(ctx, client.ListOptions{States: []api.State{api.StateQueued, api.StateRunning}})
		cancel()
		now := time.Now()
		if err == nil && (len(samples) == 0 || n == 0 || now.Sub(samples[len(samples)-1].at) >= time.Second) {
			samples = append(samples, drainSample{now, n})
		}
		if err == nil && n == 0 {
			return now, samples
		}
		<-tick.C
	}
	h.errorf("jobs still queued or running at the test's deadline: the cluster did not drain")
	return time.Time{}, samples
}
