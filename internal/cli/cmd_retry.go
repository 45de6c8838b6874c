package cli

import (
	"context"
	"fmt"
)

var retryCommand = &Command{
	Name:    "retry",
	Usage:   "jobd retry [--server URL] [--key KEY] [--json] JOB-ID",
	Summary: "put a failed or canceled job back to queued",
	Run:     runRetry,
}

func init() { commands = append(commands, retryCommand) }

func runRetry(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "retry")
	var cf clientFlags
	cf.register(fs)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	id, err := jobIDArg(fs)
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	j, err := c.Retry(ctx, id)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, j)
	}
	fmt.Fprintf(env.Stdout, "%s %s\n", j.ID, j.State)
	return nil
}
