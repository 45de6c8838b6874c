package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/bench"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

// eachBenchDatabase runs fn as a parallel subtest per store driver with
// the URL of a fresh, migrated database and a store open on it.
func eachBenchDatabase(t *testing.T, fn func(t *testing.T, database string, st store.Store)) {
	t.Parallel()
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var database string
			var st store.Store
			var err error
			if d == "sqlite" {
				path := filepath.Join(t.TempDir(), "jobd.db")
				database = "sqlite:" + path
				st, err = sqlite.Open(ctx, path, sqlite.Options{})
			} else {
				database = migrated.NewDatabase(t)
				st, err = postgres.Open(ctx, database, postgres.Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			fn(t, database, st)
		})
	}
}

// benchQueueLimits returns the bench queue's stored limits.
func benchQueueLimits(t *testing.T, st store.Store) flow.Limits {
	t.Helper()
	all, err := st.QueueSettings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range all {
		if q.Name == bench.Queue {
			return q.Limits
		}
	}
	return flow.Limits{}
}

// runFlowBench runs jobd bench --mode flow --json with args on database
// and returns its figures, failing the test unless it exits 0.
func runFlowBench(t *testing.T, database string, args ...string) map[string]float64 {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
	// Jobs held 1 ms, with more workers than partitions: without limits
	// the handlers of one partition overlap.
	args = append([]string{"bench", "--database", database, "--mode", "flow", "--json", "--concurrency", "200", "--hold", "1ms"}, args...)
	if code := Main(t.Context(), args, env); code != 0 {
		t.Fatalf("jobd %s: exit %d; stderr %q", strings.Join(args, " "), code, stderr.String())
	}
	var figs map[string]float64
	if err := json.Unmarshal(stdout.Bytes(), &figs); err != nil {
		t.Fatalf("--json printed %q: %v", stdout.String(), err)
	}
	return figs
}

// checkFigures reports each of names that figs lacks (or holds as 0), and
// any figure figs holds besides names.
func checkFigures(t *testing.T, figs map[string]float64, names ...string) {
	t.Helper()
	for _, name := range names {
		if figs[name] <= 0 {
			t.Errorf("figure %s: %v, want > 0 (figures %v)", name, figs[name], figs)
		}
	}
	if len(figs) != len(names) {
		t.Errorf("%d figures, want %d: %v", len(figs), len(names), figs)
	}
}

// checkBenchQueueLeft reports limits or jobs left in the bench queue.
func checkBenchQueueLeft(t *testing.T, st store.Store) {
	t.Helper()
	if l := benchQueueLimits(t, st); l != (flow.Limits{}) {
		t.Errorf("bench queue's limits after the run: %s, want none", l)
	}
	queues, err := st.QueueList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		for state, n := range q.Counts {
			if q.Name == bench.Queue && n != 0 {
				t.Errorf("bench queue after the run: %d jobs %s, want none", n, state)
			}
		}
	}
}

// TestBenchFlow: jobd bench --mode flow works a backlog over 20
// partitions without limits and under partition_limit 2, prints each
// figure in --json, the handlers never saw more than 2 jobs of one
// partition running at once under the limit, and the bench queue is left
// without limits and without jobs.
func TestBenchFlow(t *testing.T) {
	eachBenchDatabase(t, func(t *testing.T, database string, st store.Store) {
		figs := runFlowBench(t, database, "--jobs", "2000", "--partitions", "20", "--partition-limit", "2")
		checkFigures(t, figs,
			"flow.unlimited.insert", "flow.unlimited.work", "flow.unlimited.max_running_per_partition",
			"flow.partition_limit.insert", "flow.partition_limit.work", "flow.partition_limit.max_running_per_partition")
		if got := figs["flow.partition_limit.max_running_per_partition"]; got > 2 {
			t.Errorf("handlers saw %v jobs of one partition running at once under partition_limit 2", got)
		}
		t.Logf("most jobs of one partition running at once: %v without limits, %v under partition_limit 2",
			figs["flow.unlimited.max_running_per_partition"], figs["flow.partition_limit.max_running_per_partition"])
		checkBenchQueueLeft(t, st)
	})
}

// TestBenchFlowGlobalLimit: --global-limit adds a step whose handlers
// never saw more jobs running at once than the limit. (Its backlog is
// small: a global limit of 5 works a no-op backlog slowly.)
func TestBenchFlowGlobalLimit(t *testing.T) {
	eachBenchDatabase(t, func(t *testing.T, database string, st store.Store) {
		figs := runFlowBench(t, database, "--jobs", "200", "--partitions", "20", "--partition-limit", "3", "--global-limit", "5")
		checkFigures(t, figs,
			"flow.unlimited.insert", "flow.unlimited.work", "flow.unlimited.max_running_per_partition",
			"flow.partition_limit.insert", "flow.partition_limit.work", "flow.partition_limit.max_running_per_partition",
			"flow.global_limit.insert", "flow.global_limit.work", "flow.global_limit.max_running_per_partition",
			"flow.global_limit.max_running")
		if got := figs["flow.partition_limit.max_running_per_partition"]; got > 3 {
			t.Errorf("handlers saw %v jobs of one partition running at once under partition_limit 3", got)
		}
		if got := figs["flow.global_limit.max_running"]; got > 5 {
			t.Errorf("handlers saw %v jobs running at once under global_limit 5", got)
		}
		checkBenchQueueLeft(t, st)
	})
}

// cancelOnLine is a writer that cancels a context once what was written
// to it holds a line starting with prefix.
type cancelOnLine struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	prefix string
	cancel context.CancelFunc
}

func (c *cancelOnLine) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.HasPrefix(c.buf.String(), c.prefix) || strings.Contains(c.buf.String(), "\n"+c.prefix) {
		c.cancel()
	}
	return len(p), nil
}

// TestBenchFlowCancelledRestoresLimits: a flow bench cancelled (Ctrl-C)
// while the bench queue is under its partition_limit gives the queue back
// the limits it had before the run.
func TestBenchFlowCancelledRestoresLimits(t *testing.T) {
	eachBenchDatabase(t, func(t *testing.T, database string, st store.Store) {
		before := flow.Limits{GlobalLimit: 7, ThrottleBy: flow.ByPartitionKey}
		if err := st.QueueSetLimits(context.Background(), bench.Queue, before); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// The insert figure of the limited step is printed after its limits
		// are set and before its backlog is worked.
		out := &cancelOnLine{prefix: "flow.partition_limit.insert", cancel: cancel}
		var stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: &stderr, Getenv: func(string) string { return "" }}
		code := Main(ctx, []string{"bench", "--database", database, "--mode", "flow",
			"--jobs", "500", "--partitions", "100", "--concurrency", "100"}, env)
		if code == 0 {
			t.Fatalf("a cancelled bench exited 0; stdout %q", out.buf.String())
		}
		if !strings.Contains(out.buf.String(), "flow.partition_limit.insert") {
			t.Fatalf("the bench ended before the limited step: stdout %q, stderr %q", out.buf.String(), stderr.String())
		}
		if l := benchQueueLimits(t, st); l != before {
			t.Errorf("bench queue's limits after a cancelled run: %s, want %s", l, before)
		}
	})
}

// TestBenchFlowFlagErrors: the flow mode's flags refuse what no queue
// could be set to, with exit code 2.
func TestBenchFlowFlagErrors(t *testing.T) {
	database := "sqlite:" + filepath.Join(t.TempDir(), "jobd.db")
	for _, args := range [][]string{
		{"--partitions", "0"},
		{"--partition-limit", "0"},
		{"--global-limit", "-1"},
		{"--partition-limit", "1000001"},
		{"--hold", "-1s"},
	} {
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }}
		if code := Main(t.Context(), append([]string{"bench", "--database", database, "--mode", "flow"}, args...), env); code != 2 {
			t.Errorf("jobd bench --mode flow %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}

// TestBenchRemote: jobd bench --mode remote, in a tiny configuration,
// works its backlog in-process and with Go SDK workers over HTTP, submits
// batches, and reports each figure's min, median and max (no figure is
// held to a threshold: timings depend on the machine).
func TestBenchRemote(t *testing.T) {
	eachBenchDatabase(t, func(t *testing.T, database string, st store.Store) {
		var stdout, stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
		args := []string{"bench", "--database", database, "--mode", "remote", "--json", "--jobs", "60",
			"--concurrency", "8", "--workers", "2", "--worker-concurrency", "4", "--runs", "2"}
		if code := Main(t.Context(), args, env); code != 0 {
			t.Fatalf("jobd %s: exit %d; stderr %q", strings.Join(args, " "), code, stderr.String())
		}
		var figs map[string]float64
		if err := json.Unmarshal(stdout.Bytes(), &figs); err != nil {
			t.Fatalf("--json printed %q: %v", stdout.String(), err)
		}
		for _, name := range []string{"inprocess.jobs_per_s", "sdk.jobs_per_s", "batch_submit.jobs_per_s", "batch_submit_one_caller.jobs_per_s", "claim_to_start.p50_ms", "claim_to_start.p99_ms"} {
			for _, stat := range []string{"min", "median", "max"} {
				v, ok := figs["remote."+name+"."+stat]
				if !ok || v < 0 || (strings.HasSuffix(name, "jobs_per_s") && v == 0) {
					t.Errorf("remote.%s.%s = %v (reported %v)", name, stat, v, ok)
				}
			}
		}
		res, err := st.JobList(t.Context(), store.ListParams{Queue: bench.Queue})
		if err != nil || res.Total != 0 {
			t.Fatalf("%d jobs left in the bench queue (%v)", res.Total, err)
		}
	})
}
