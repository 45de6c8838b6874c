package cli

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

var cancelCommand = &Command{
	Name:    "cancel",
	Usage:   "jobd cancel [--server URL] [--key KEY] [--json] JOB-ID",
	Summary: "cancel a job (a queued one at once; a running one is told to stop)",
	Run: func(ctx context.Context, env *Env, args []string) error {
		return runJobAction(ctx, env, "cancel", args, (*client.Client).Cancel)
	},
}

var retryCommand = &Command{
	Name:    "retry",
	Usage:   "jobd retry [--server URL] [--key KEY] [--json] JOB-ID",
	Summary: "put a failed or canceled job back to queued",
	Run: func(ctx context.Context, env *Env, args []string) error {
		return runJobAction(ctx, env, "retry", args, (*client.Client).Retry)
	},
}

func init() { commands = append(commands, cancelCommand, retryCommand) }

// runJobAction is the body of the commands that do one thing to one job
// and print it: parse flags and the id, call action, print the job.
func runJobAction(ctx context.Context, env *Env, name string, args []string,
	action func(*client.Client, context.Context, uuid.UUID) (*api.Job, error)) error {
	fs := newFlagSet(env, name)
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
	j, err := action(c, ctx, id)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, j)
	}
	if j.CancelRequested && !j.State.Final() {
		fmt.Fprintf(env.Stdout, "%s %s, cancel requested\n", j.ID, j.State)
		return nil
	}
	fmt.Fprintf(env.Stdout, "%s %s\n", j.ID, j.State)
	return nil
}
