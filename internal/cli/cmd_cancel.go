package cli

import (
	"context"
	"fmt"
)

var cancelCommand = &Command{
	Name:    "cancel",
	Usage:   "jobd cancel [--server URL] [--key KEY] [--json] JOB-ID",
	Summary: "cancel a job (a running one stops at its next heartbeat)",
	Run:     runCancel,
}

func init() { commands = append(commands, cancelCommand) }

func runCancel(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "cancel")
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
	j, err := c.Cancel(ctx, id)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, j)
	}
	if j.State.Final() {
		fmt.Fprintf(env.Stdout, "%s %s\n", j.ID, j.State)
	} else {
		fmt.Fprintf(env.Stdout, "%s %s, cancel requested\n", j.ID, j.State)
	}
	return nil
}
