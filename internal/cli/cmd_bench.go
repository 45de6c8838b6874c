package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jobd/jobd/bench"
)

var benchCommand = &Command{
	Name:    "bench",
	Usage:   "jobd bench [--database URL] [--mode all|" + strings.Join(bench.Modes, "|") + "] [--jobs N] [--duration D] [--json]",
	Summary: "measure throughput, latency and backlog sensitivity on a store",
	Run:     runBench,
}

func init() { commands = append(commands, benchCommand) }

func runBench(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "bench")
	database := fs.String("database", defaultDatabase, "postgres://… or sqlite:PATH")
	mode := fs.String("mode", "all", "all, "+strings.Join(bench.Modes, ", ")+", "+bench.ModeSteady+" or "+bench.ModeProcess+" (the last two not part of all)")
	jobs := fs.Int("jobs", 200_000, "backlog size of the throughput mode")
	duration := fs.Duration("duration", 30*time.Second, "length of the continuous and latency modes")
	concurrency := fs.Int("concurrency", 1000, "worker goroutines")
	rate := fs.Int("rate", 100, "latency mode: single inserts per second")
	keep := fs.Bool("keep", false, "leave the bench queue's jobs in the database")
	asJSON := fs.Bool("json", false, "print the figures as one JSON object")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if !bench.ValidMode(*mode) {
		return usageError("--mode must be all or one of %s", strings.Join(bench.Modes, ", "))
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
	var progress io.Writer = env.Stdout
	if *asJSON {
		progress = nil
	}
	figs, err := bench.Run(ctx, bench.Config{
		Store: st, Mode: *mode, Jobs: *jobs, Duration: *duration,
		Concurrency: *concurrency, Rate: *rate, Keep: *keep, Logger: logger,
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
