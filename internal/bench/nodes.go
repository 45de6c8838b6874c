package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// ModeNodes is run only when asked for by name: a backlog worked by N
// `jobd serve` nodes on one PostgreSQL, for each N of Config.Nodes, with
// jobs that sleep 10 ms (the built-in sleep kind, which also writes its
// progress once) and with no-op jobs.
const ModeNodes = "nodes"

// The nodes mode's defaults.
var (
	// DefaultNodes are the node counts the nodes mode measures.
	DefaultNodes = []int{1, 2, 4, 8}
)

const (
	// DefaultNodeConcurrency is each node's worker pool in the nodes mode.
	DefaultNodeConcurrency = 10
	// DefaultNodeJobs is the nodes mode's backlog.
	DefaultNodeJobs = 5000
	// sleepMS is how long each job of the sleep variant takes.
	sleepMS = 10
	// sampleEvery is how often the nodes mode reads the backlog and the
	// database's sessions.
	sampleEvery = 50 * time.Millisecond
)

// nodesVariant is one kind of job the nodes mode measures.
type nodesVariant struct {
	name, kind string
	args       json.RawMessage
}

var nodesVariants = []nodesVariant{
	{"sleep10ms", "sleep", json.RawMessage(`{"ms":` + strconv.Itoa(sleepMS) + `}`)},
	{"noop", "noop", json.RawMessage(`{}`)},
}

// nodesRun is what one run of N nodes measured.
type nodesRun struct {
	rate      float64 // jobs a second
	claims    float64 // the engines' claims, all nodes
	claimed   float64 // jobs they claimed
	claimSecs float64 // time spent in claims, all nodes
	lockWaits float64 // sessions waiting for a lock, mean of the samples
	active    float64 // jobd sessions running a statement, mean of the samples
	conns     float64 // jobd sessions per node, most of the samples
}

// nodesBench measures the nodes mode; see ModeNodes.
func nodesBench(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	if cfg.Jobd == "" || cfg.Database == "" {
		return nil, fmt.Errorf("the nodes mode needs the jobd binary and a postgres:// database")
	}
	if !strings.HasPrefix(cfg.Database, "postgres") {
		return nil, fmt.Errorf("the nodes mode measures PostgreSQL: --database must be postgres://…")
	}
	conn, err := pgx.Connect(ctx, cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("connect to sample pg_stat_activity: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	fmt.Fprintf(w, "nodes: %d jobs a run, %d workers a node, %d run(s) each; load average %s\n",
		cfg.Jobs, cfg.NodeConcurrency, cfg.Runs, loadAverage())
	var figs []Figure
	for _, v := range nodesVariants {
		var base float64
		for _, n := range cfg.Nodes {
			runs := make([]nodesRun, 0, cfg.Runs)
			for range cfg.Runs {
				r, err := nodesOnce(ctx, cfg, conn, v, n)
				if err != nil {
					return figs, fmt.Errorf("%s, %d nodes: %w", v.name, n, err)
				}
				runs = append(runs, r)
			}
			slices.SortFunc(runs, func(a, b nodesRun) int { return cmp.Compare(a.rate, b.rate) })
			med := runs[len(runs)/2]
			if base == 0 {
				base = med.rate / float64(n)
			}
			p := fmt.Sprintf("nodes.%s.n%d.", v.name, n)
			figs = append(figs,
				report(w, Figure{p + "jobs_per_s.min", runs[0].rate, "jobs/s"}),
				report(w, Figure{p + "jobs_per_s.median", med.rate, "jobs/s"}),
				report(w, Figure{p + "jobs_per_s.max", runs[len(runs)-1].rate, "jobs/s"}),
				report(w, Figure{p + "ideal_linear", base * float64(n), "jobs/s"}))
			if v.kind == "sleep" {
				figs = append(figs, report(w, Figure{p + "ideal_pools", float64(n*cfg.NodeConcurrency) * 1000 / sleepMS, "jobs/s"}))
			}
			figs = append(figs,
				report(w, Figure{p + "claims_per_100_jobs", 100 * med.claims / max(med.claimed, 1), "claims"}),
				report(w, Figure{p + "claim_ms_mean", 1000 * med.claimSecs / max(med.claims, 1), "ms"}),
				report(w, Figure{p + "lock_waits_mean", med.lockWaits, "sessions"}),
				report(w, Figure{p + "active_sessions_mean", med.active, "sessions"}),
				report(w, Figure{p + "connections_per_node", med.conns, "connections"}))
		}
	}
	fmt.Fprintf(w, "nodes: load average %s\n", loadAverage())
	return figs, nil
}

// nodesOnce works one backlog of variant v with n nodes.
func nodesOnce(ctx context.Context, cfg Config, conn *pgx.Conn, v nodesVariant, n int) (nodesRun, error) {
	var r nodesRun
	if err := purge(ctx, cfg.Store); err != nil {
		return r, err
	}
	// The backlog waits in a paused queue until every node serves.
	if err := cfg.Store.QueueSetPaused(ctx, Queue, true); err != nil {
		return r, err
	}
	defer func() { _ = cfg.Store.QueueSetPaused(context.WithoutCancel(ctx), Queue, false) }()
	for from := 0; from < cfg.Jobs; from += 1000 {
		ps := make([]job.InsertParams, min(1000, cfg.Jobs-from))
		for i := range ps {
			ps[i] = job.InsertParams{Queue: Queue, Kind: v.kind, Args: v.args}
		}
		if _, err := cfg.Store.JobInsertMany(ctx, ps); err != nil {
			return r, fmt.Errorf("insert the backlog: %w", err)
		}
	}
	nodes := make([]*benchNode, 0, n)
	defer func() {
		for _, nd := range nodes {
			nd.stop()
		}
	}()
	for i := range n {
		nd, err := startBenchNode(ctx, cfg, i)
		if err != nil {
			return r, err
		}
		nodes = append(nodes, nd)
	}
	for _, nd := range nodes {
		if err := nd.waitServing(ctx); err != nil {
			return r, err
		}
	}
	start := time.Now()
	if err := cfg.Store.QueueSetPaused(ctx, Queue, false); err != nil {
		return r, err
	}
	samples := 0
	for {
		left, err := activeJobs(ctx, cfg.Store)
		if err != nil {
			return r, err
		}
		if left == 0 {
			break
		}
		var waits, active, total int
		if err := conn.QueryRow(ctx, sessionsSQL).Scan(&waits, &active, &total); err != nil {
			return r, fmt.Errorf("sample pg_stat_activity: %w", err)
		}
		samples++
		r.lockWaits += float64(waits)
		r.active += float64(active)
		r.conns = max(r.conns, float64(total)/float64(n))
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(sampleEvery):
		}
	}
	r.rate = float64(cfg.Jobs) / time.Since(start).Seconds()
	if samples > 0 {
		r.lockWaits /= float64(samples)
		r.active /= float64(samples)
	}
	for _, nd := range nodes {
		m, err := nd.claimMetrics(ctx)
		if err != nil {
			return r, err
		}
		r.claims += m[0]
		r.claimSecs += m[1]
		r.claimed += m[2]
	}
	return r, nil
}

// sessionsSQL counts the nodes' sessions of the database: waiting for a
// lock, running a statement, all. The advisory lock waits are the
// election's (each node but the leader waits for the leader's presence,
// see store/postgres LeaderWatch): no contention, and not counted.
const sessionsSQL = `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event <> 'advisory'),
       count(*) FILTER (WHERE state = 'active' AND wait_event IS DISTINCT FROM 'advisory'),
       count(*)
FROM pg_stat_activity
WHERE datname = current_database() AND application_name = '` + nodeAppName + `'`

// nodeAppName is the application_name of the nodes' sessions: the pool's,
// the listener's and the leader election's.
const nodeAppName = "jobd-bench-node"

// activeJobs counts the bench queue's queued and running jobs.
func activeJobs(ctx context.Context, s store.QueueStore) (int64, error) {
	qs, err := s.QueueList(ctx)
	if err != nil {
		return 0, err
	}
	for _, q := range qs {
		if q.Name == Queue {
			return q.Counts[job.StateQueued] + q.Counts[job.StateRunning], nil
		}
	}
	return 0, nil
}

// benchNode is one `jobd serve` of the nodes mode.
type benchNode struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func startBenchNode(ctx context.Context, cfg Config, i int) (*benchNode, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	workers := fmt.Sprintf(`[{"queue":%q,"concurrency":%d}]`, Queue, cfg.NodeConcurrency)
	// The nodes' sessions name themselves, so that those of the bench's
	// own store are not counted.
	sep := "?"
	if strings.Contains(cfg.Database, "?") {
		sep = "&"
	}
	database := cfg.Database + sep + "application_name=" + nodeAppName
	cmd := exec.CommandContext(ctx, cfg.Jobd, "serve", "--database", database, "--listen", addr,
		"--node", "bench-node-"+strconv.Itoa(i), "--workers", workers, "--log-level", "warn",
		// Finished jobs stay until the bench purges them.
		"--retention", "8760h")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Only the flags configure a node: the environment's JOBD_* would be
	// read as flags too.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JOBD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start jobd serve: %w", err)
	}
	nd := &benchNode{addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(nd.done) }()
	return nd, nil
}

// waitServing waits until the node answers /health.
func (nd *benchNode) waitServing(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + nd.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-nd.done:
			return fmt.Errorf("jobd serve on %s exited before it served", nd.addr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("jobd serve on %s does not serve after a minute", nd.addr)
}

// claimMetrics reads the node's claims, seconds spent claiming and jobs
// claimed, in the bench queue, from its /metrics.
func (nd *benchNode) claimMetrics(ctx context.Context) ([3]float64, error) {
	var m [3]float64
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+nd.addr+"/metrics", nil)
	if err != nil {
		return m, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return m, fmt.Errorf("metrics of %s: %w", nd.addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || !strings.Contains(name, `queue="`+Queue+`"`) {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, "jobd_claim_duration_seconds_count{"):
			m[0] += f
		case strings.HasPrefix(name, "jobd_claim_duration_seconds_sum{"):
			m[1] += f
		case strings.HasPrefix(name, "jobd_jobs_claimed_total{"):
			m[2] += f
		}
	}
	return m, nil
}

// stop ends the node (SIGTERM, then SIGKILL after 10 s) and waits.
func (nd *benchNode) stop() {
	_ = nd.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-nd.done:
	case <-time.After(10 * time.Second):
		_ = nd.cmd.Process.Kill()
		<-nd.done
	}
}

// loadAverage is the machine's load average (1, 5, 15 minutes), from
// /proc/loadavg; "unknown" elsewhere.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
