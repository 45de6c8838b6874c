package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jobd/jobd"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/bench"
	"github.com/jobd/jobd/internal/buildinfo"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

var benchCommand = &Command{
	Name:    "bench",
	Usage:   "jobd bench [--database URL] [--mode all|" + strings.Join(append(slices.Clone(bench.Modes), bench.Named...), "|") + "] [--jobs N] [--duration D] [--partitions N] [--partition-limit N] [--global-limit N] [--hold D] [--nodes 1,2,4,8] [--node-concurrency N] [--workers N] [--worker-concurrency N] [--runs N] [--json] [--metrics] [--tracing] [--cpuprofile FILE]",
	Summary: "measure throughput, latency, backlog sensitivity and flow control's cost on a store",
	Run:     runBench,
}

func init() { commands = append(commands, benchCommand) }

func runBench(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "bench")
	database := fs.String("database", defaultDatabase, "postgres://… or sqlite:PATH")
	mode := fs.String("mode", "all", "all ("+strings.Join(bench.Modes, ", ")+"), or one of those or "+strings.Join(bench.Named, ", ")+" (not part of all)")
	jobs := fs.Int("jobs", 200_000, "backlog size of the throughput, vacuum and flow modes")
	duration := fs.Duration("duration", 30*time.Second, "length of the continuous, latency and steady modes")
	concurrency := fs.Int("concurrency", 1000, "worker goroutines")
	rate := fs.Int("rate", 100, "latency mode: single inserts per second")
	partitions := fs.Int("partitions", 1000, "flow mode: partition_keys the backlog is spread over, round-robin")
	partitionLimit := fs.Int("partition-limit", 2, "flow mode: the bench queue's partition_limit in its limited step")
	globalLimit := fs.Int("global-limit", 0, "flow mode: the bench queue's global_limit in a last step (0: no such step)")
	hold := fs.Duration("hold", 0, "flow mode: how long each job runs (0: a no-op); with no-op jobs one partition's seldom overlap")
	nodes := fs.String("nodes", "1,2,4,8", "nodes mode: the counts of `jobd serve` nodes to measure, in turn")
	nodeConc := fs.Int("node-concurrency", bench.DefaultNodeConcurrency, "nodes mode: each node's worker pool")
	runs := fs.Int("runs", 1, "nodes, remote and workflow modes: runs of each (the figures are their min, median and max)")
	remoteWorkers := fs.Int("workers", bench.DefaultRemoteWorkers, "remote mode: Go SDK workers, each with a worker key of its own")
	remoteSlots := fs.Int("worker-concurrency", bench.DefaultRemoteSlots, "remote mode: each SDK worker's concurrency")
	keep := fs.Bool("keep", false, "leave the bench queue's jobs in the database")
	asJSON := fs.Bool("json", false, "print the figures as one JSON object")
	withMetrics := fs.Bool("metrics", false, "record the engine's metrics (and refresh the queue health snapshot every 5s), as serve does")
	withTracing := fs.Bool("tracing", false, "trace every execution (the OTEL_* exporter when configured, else spans batched and dropped)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (go tool pprof) to this file")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if !bench.ValidMode(*mode) {
		return usageError("--mode must be all or one of %s", strings.Join(append(slices.Clone(bench.Modes), bench.Named...), ", "))
	}
	counts, err := parseCounts(*nodes)
	if err != nil || *nodeConc < 1 || *runs < 1 {
		return usageError("--nodes must be node counts like 1,2,4,8, --node-concurrency and --runs at least 1")
	}
	if *mode == bench.ModeNodes && !flagSet(fs, "jobs") {
		*jobs = bench.DefaultNodeJobs
	}
	if *mode == bench.ModeRemote && !flagSet(fs, "jobs") {
		*jobs = bench.DefaultRemoteJobs
	}
	if *remoteWorkers < 1 || *remoteSlots < 1 {
		return usageError("--workers and --worker-concurrency must be at least 1")
	}
	jobdBin := ""
	if *mode == bench.ModeNodes {
		if jobdBin, err = os.Executable(); err != nil {
			return fmt.Errorf("the nodes mode runs this binary as jobd serve: %w", err)
		}
	}
	if *partitions < 1 || *partitionLimit < 1 || *partitionLimit > flow.MaxLimit || *globalLimit < 0 || *globalLimit > flow.MaxLimit || *hold < 0 {
		return usageError("--partitions and --partition-limit must be at least 1, --global-limit and --hold at least 0, the limits at most %d", flow.MaxLimit)
	}
	logger := newLogger(env, "warn", "text", urlSecrets(*database))
	st, err := openStore(ctx, *database, logger)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var observer observe.Jobs
	if *withMetrics {
		m := telemetry.NewMetrics(telemetry.Config{Version: buildinfo.Version(), Pools: poolsOf(st)})
		health := m.WatchHealth(telemetry.HealthConfig{Source: st, Logger: logger})
		hctx, stop := context.WithCancel(ctx)
		defer stop()
		go health.Run(hctx)
		observer = m
	}
	var tracer observe.Tracer
	if *withTracing {
		tp, err := telemetry.TracerProviderFromEnv(ctx, env.Getenv, buildinfo.Version())
		if err != nil {
			return usageError("%v", err)
		}
		if tp == nil {
			tp = telemetry.DiscardingTracerProvider()
		}
		defer shutdownTracing(ctx, tp, logger)
		tracer = telemetry.NewTracer(tp, nil)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	var progress io.Writer = env.Stdout
	if *asJSON {
		progress = nil
	}
	figs, err := bench.Run(ctx, bench.Config{
		Store: st, Mode: *mode, Jobs: *jobs, Duration: *duration,
		Concurrency: *concurrency, Rate: *rate, Keep: *keep, Logger: logger,
		Partitions: *partitions, PartitionLimit: *partitionLimit, GlobalLimit: *globalLimit, Hold: *hold,
		Observer: observer, Tracer: tracer,
		Jobd: jobdBin, Database: *database, Nodes: counts, NodeConcurrency: *nodeConc, Runs: *runs,
		Serve: benchServer(logger), RemoteWorkers: *remoteWorkers, RemoteSlots: *remoteSlots,
	}, progress)
	if *asJSON {
		out := make(map[string]float64, len(figs))
		for _, f := range figs {
			out[f.Name] = f.Value
		}
		enc := json.NewEncoder(env.Stdout)
		if jerr := enc.Encode(out); jerr != nil && err == nil {
			err = jerr
		}
	}
	return err
}

// parseCounts reads a comma-separated list of positive counts.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is no count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// flagSet reports whether the command line (or the environment) set the
// flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// benchServer is the remote mode's server: jobd.NewServer over the
// bench's store, in this process, on a loopback port, with
// authentication on (the admin secret the mode gives) and no pools of
// its engine's own, as jobd serve runs it.
func benchServer(logger *slog.Logger) bench.Server {
	return func(ctx context.Context, st store.Store, secret string) (string, func() error, error) {
		srv, err := jobd.NewServer(ctx, jobd.Config{Store: st, Listen: "127.0.0.1:0", AdminSecret: secret, Logger: logger})
		if err != nil {
			return "", nil, err
		}
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan error, 1)
		go func() { done <- srv.Run(rctx) }()
		stop := func() error {
			cancel()
			err := <-done
			return errors.Join(err, srv.Close())
		}
		return "http://" + srv.Addr(), stop, nil
	}
}
