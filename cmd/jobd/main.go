// Command jobd is a durable job server. See the README for a tour.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/jobd/jobd/internal/cli"
)

func main() {
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
