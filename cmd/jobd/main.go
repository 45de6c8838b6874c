// Command jobd is a durable job server. See the README for a tour.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/jobd/jobd/cmd/jobd/internal/cli"
)

func main() {
	setGCPercent(os.Getenv)
	// The first SIGINT/SIGTERM cancels ctx (a graceful stop); a second one,
	// with the default handling restored, ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	env := &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	os.Exit(cli.Main(ctx, os.Args[1:], env))
}

// defaultGCPercent is jobd's GOGC when the environment sets none. Its
// live heap is small and turns over fast (every job claimed is decoded,
// run and dropped), so at Go's default of 100 the collector took about a
// third of the process's CPU in a steady-state bench; at 400 it collects
// a quarter as often, for a heap that may grow to five times the live
// one instead of twice. GOGC (and GOMEMLIMIT) in the environment win.
const defaultGCPercent = 400

// setGCPercent sets defaultGCPercent unless getenv has a GOGC.
func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}
