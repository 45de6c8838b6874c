package flowcheck_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// work is a job's args: its partition, how long its handler holds it,
// and, for a remote worker, a throttle to report on its first attempt.
type work struct {
	Partition  string `json:"p"`
	HoldMS     int    `json:"hold_ms"`
	ThrottleMS int    `json:"throttle_ms,omitempty"`
}

// monitor is what the handlers themselves see: how many of them run at
// once, in all and per partition, and when each started. A handler enters
// after its claim committed and leaves before its outcome is sent, so the
// monitor never counts more than the database holds running: a maximum
// above a limit is a limit the database let through.
type monitor struct {
	mu         sync.Mutex
	running    int
	byPart     map[string]int
	maxRunning int
	maxPart    int
	starts     map[string][]time.Time // by partition
	done       int
	allDone    chan struct{}
	want       int
	throttles  []string
}

func newMonitor(want int) *monitor {
	return &monitor{byPart: map[string]int{}, starts: map[string][]time.Time{}, allDone: make(chan struct{}), want: want}
}

func (m *monitor) enter(part string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running++
	m.byPart[part]++
	m.maxRunning = max(m.maxRunning, m.running)
	m.maxPart = max(m.maxPart, m.byPart[part])
	m.starts[part] = append(m.starts[part], time.Now())
}

// throttleOnce reports whether a handler is the first to throttle part,
// and records it: a throttled job runs again after the throttle with the
// same attempt number, since a throttle is not an attempt.
func (m *monitor) throttleOnce(part string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Contains(m.throttles, part) {
		return false
	}
	m.throttles = append(m.throttles, part)
	return true
}

func (m *monitor) leave(part string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running--
	m.byPart[part]--
	m.done++
	if m.done == m.want && m.want > 0 {
		close(m.allDone)
	}
}

// run is the handler every node and remote worker runs.
func (m *monitor) run(ctx context.Context, w work) error {
	m.enter(w.Partition)
	defer m.leave(w.Partition)
	select {
	case <-time.After(time.Duration(w.HoldMS) * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cluster is three jobd nodes (engines, each with its own connection
// pool and node name) and two remote workers over HTTP, on one
// PostgreSQL database, all running queue's jobs with one monitor.
type cluster struct {
	st    []store.Store
	admin *client.Client
}

func startCluster(t *testing.T, queue string, m *monitor) *cluster {
	t.Helper()
	return startNodes(t, queue, m, 8, 2)
}

// startNodes is startCluster with pools of concurrency on the nodes (0:
// none, node 0 only listening, for the long-polls of the remote workers)
// and remotes remote workers.
func startNodes(t testing.TB, queue string, m *monitor, concurrency, remotes int) *cluster {
	t.Helper()
	dsn := migrated.NewDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	c := &cluster{}
	var first *engine.Engine
	for i := range 3 {
		st, err := postgres.Open(ctx, dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c.st = append(c.st, st)
		var pools []engine.QueueConfig
		if concurrency > 0 {
			pools = []engine.QueueConfig{{Queue: queue, Concurrency: concurrency}}
		}
		eng, err := engine.New(engine.Config{Store: st, Node: fmt.Sprintf("node-%d", i), Listen: i == 0,
			Logger: slog.New(slog.DiscardHandler), Queues: pools})
		if err != nil {
			t.Fatal(err)
		}
		engine.Register(eng, "work", func(ctx context.Context, j *engine.Job[work]) (any, error) {
			return nil, m.run(ctx, j.Args)
		})
		if first == nil {
			first = eng
		}
		wg.Go(func() { _ = eng.Run(ctx) })
	}
	const secret = "flow-admin"
	workers, err := remote.New(remote.Config{Store: c.st[0], Policy: first, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpapi.New(httpapi.Config{Store: c.st[0], AdminSecret: secret, Remote: workers,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if c.admin, err = client.New(srv.URL, secret); err != nil {
		t.Fatal(err)
	}
	for i := range remotes {
		reg, err := c.admin.CreateWorker(ctx, api.WorkerRequest{Name: fmt.Sprintf("remote-%d", i), Capabilities: []string{"remote"}})
		if err != nil {
			t.Fatal(err)
		}
		wc, err := client.New(srv.URL, reg.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		w := client.NewWorker(wc, client.WorkerConfig{Queues: []string{queue}, Concurrency: 4,
			Logger: slog.New(slog.DiscardHandler)})
		client.Handle(w, "work", func(ctx context.Context, task *client.Task[work]) (json.RawMessage, error) {
			err := m.run(ctx, task.Args)
			if d := task.Args.ThrottleMS; d > 0 && err == nil && m.throttleOnce(task.Args.Partition) {
				return nil, client.Throttle(errors.New("the downstream answered 429"), time.Duration(d)*time.Millisecond)
			}
			return nil, err
		})
		wg.Go(func() { _ = w.Run(ctx) })
	}
	// Registered last, so it runs first: the nodes and workers stop before
	// the server closes (which waits for their long-polls) and the stores.
	t.Cleanup(func() { cancel(); wg.Wait() })
	return c
}

func (c *cluster) setLimits(t testing.TB, queue string, l flow.Limits) {
	t.Helper()
	if err := c.st[1].QueueSetLimits(context.Background(), queue, l); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) insert(t testing.TB, queue string, ws []work) []*job.Job {
	t.Helper()
	ps := make([]job.InsertParams, len(ws))
	for i, w := range ws {
		args, _ := json.Marshal(w)
		ps[i] = job.InsertParams{Queue: queue, Kind: "work", Args: args, PartitionKey: w.Partition}
		if w.ThrottleMS > 0 {
			ps[i].Requires = []string{"remote"}
		}
	}
	var jobs []*job.Job
	for len(ps) > 0 {
		n := min(len(ps), 500)
		res, err := c.st[2].JobInsertMany(context.Background(), ps[:n])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			jobs = append(jobs, r.Job)
		}
		ps = ps[n:]
	}
	return jobs
}

// wait waits for m's jobs to be done, failing the test after a bound far
// above what the work needs.
func (m *monitor) wait(t testing.TB, bound time.Duration) {
	t.Helper()
	select {
	case <-m.allDone:
	case <-time.After(bound):
		m.mu.Lock()
		defer m.mu.Unlock()
		t.Fatalf("only %d of %d jobs ran within %s", m.done, m.want, bound)
	}
}

// TestLimitsAcrossNodes: global_limit 5 and partition_limit 2 hold at
// every instant, as the handlers of three nodes and two remote workers
// see them, over 3 000 jobs in 40 partitions, and every job runs.
func TestLimitsAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("3 000 jobs across nodes run without -short")
	}
	const queue, jobs, parts = "limited", 3000, 40
	m := newMonitor(jobs)
	c := startCluster(t, queue, m)
	c.setLimits(t, queue, flow.Limits{GlobalLimit: 5, PartitionLimit: 2})
	ws := make([]work, jobs)
	for i := range ws {
		// One partition takes a third of the jobs, at the head of the
		// queue: it must not starve the others.
		p := fmt.Sprintf("p%d", i%parts)
		if i < jobs/3 {
			p = "big"
		}
		ws[i] = work{Partition: p, HoldMS: 1 + i%3}
	}
	c.insert(t, queue, ws)
	m.wait(t, 5*time.Minute)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.maxRunning > 5 || m.maxPart > 2 {
		t.Fatalf("handlers saw %d running at once (limit 5) and %d in one partition (limit 2)", m.maxRunning, m.maxPart)
	}
	if m.maxRunning < 5 || m.maxPart < 2 {
		t.Fatalf("handlers never saw the limits reached (%d, %d): the test proves nothing", m.maxRunning, m.maxPart)
	}
	t.Logf("%d jobs: at most %d running, %d in one partition", jobs, m.maxRunning, m.maxPart)
}

// TestRateAcrossNodes: a rate of 20 starts a second, smooth, holds within
// 10 % over 30 s, as the handlers of three nodes and two remote workers
// see it, with far more work queued than the rate lets start.
func TestRateAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("30 s of a rate")
	}
	const queue, window = "rated", 30 * time.Second
	m := newMonitor(-1)
	c := startCluster(t, queue, m)
	c.setLimits(t, queue, flow.Limits{Rate: &flow.Rate{Limit: 20, Period: time.Second}})
	ws := make([]work, 1000)
	for i := range ws {
		ws[i] = work{Partition: fmt.Sprintf("p%d", i%10), HoldMS: 1}
	}
	c.insert(t, queue, ws)
	var first time.Time
	for first.IsZero() {
		m.mu.Lock()
		for _, ss := range m.starts {
			for _, at := range ss {
				if first.IsZero() || at.Before(first) {
					first = at
				}
			}
		}
		m.mu.Unlock()
		time.Sleep(10 * time.Millisecond) // polls the handlers' record: no signal to wait on
	}
	time.Sleep(time.Until(first.Add(window + time.Second)))
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, ss := range m.starts {
		for _, at := range ss {
			if !at.Before(first) && at.Before(first.Add(window)) {
				n++
			}
		}
	}
	t.Logf("%d starts in the %s after the first (rate 20/s: %d)", n, window, 20*int(window/time.Second))
	if want := 20 * int(window/time.Second); n < want*9/10 || n > want*11/10 {
		t.Fatalf("%d starts in %s at a rate of 20/s, want %d ± 10 %%", n, window, want)
	}
}

// TestThrottleAcrossNodes: a throttle that a remote worker reports for
// one partition stops every node's and worker's starts of that partition
// until it ends, and no other partition's; the throttled job runs again
// after it, its attempt not counted.
func TestThrottleAcrossNodes(t *testing.T) {
	const queue, throttle = "throttled", 2 * time.Second
	m := newMonitor(-1)
	c := startCluster(t, queue, m)
	c.setLimits(t, queue, flow.Limits{ThrottleBy: flow.ByPartitionKey})
	trigger := c.insert(t, queue, []work{{Partition: "a", HoldMS: 1, ThrottleMS: int(throttle / time.Millisecond)}})[0]
	until := waitThrottle(t, c.st[0], queue, "a")
	ws := make([]work, 0, 100)
	for range 50 {
		ws = append(ws, work{Partition: "a", HoldMS: 1}, work{Partition: "b", HoldMS: 1})
	}
	c.insert(t, queue, ws)
	deadline := time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatal("the throttled job did not succeed within a minute")
		}
		j, err := c.st[0].JobGet(context.Background(), trigger.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == job.StateSucceeded {
			if j.Attempt != 1 {
				t.Fatalf("the throttled job ran %d attempts by its counter, want 1: a throttle is not an attempt", j.Attempt)
			}
			break
		}
		time.Sleep(20 * time.Millisecond) // the job changes in the database: polled
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.throttles) != 1 {
		t.Fatalf("throttles reported: %v, want one", m.throttles)
	}
	// The trigger's own first start came before the throttle; every later
	// start of partition a comes after it ends.
	for _, at := range m.starts["a"][1:] {
		if at.Before(until) {
			t.Fatalf("a job of partition a started %s before its throttle ended", until.Sub(at))
		}
	}
	early := 0
	for _, at := range m.starts["b"] {
		if at.Before(until) {
			early++
		}
	}
	if early == 0 {
		t.Fatalf("no job of partition b started during a's throttle: the throttle stopped the whole queue")
	}
	t.Logf("partition a: %d starts, none before its throttle ended; partition b: %d of %d started during it", len(m.starts["a"]), early, len(m.starts["b"]))
}

// waitThrottle waits until the store shows partition part of queue under
// a throttle and returns its end.
func waitThrottle(t *testing.T, st store.Store, queue, part string) time.Time {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		qs, err := st.QueueSettings(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			for _, p := range q.Throttled {
				if q.Name == queue && p.PartitionKey == part {
					return p.Until
				}
			}
		}
		time.Sleep(10 * time.Millisecond) // the throttle is written by another node: polled
	}
	t.Fatalf("partition %q of %q never throttled", part, queue)
	return time.Time{}
}
