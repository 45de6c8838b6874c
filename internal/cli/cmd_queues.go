package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/jobd/jobd/api"
)

var queuesCommand = &Command{
	Name:    "queues",
	Usage:   "jobd queues [flags] [pause NAME | resume NAME]",
	Summary: "list queues with their job counts; pause or resume one",
	Run:     runQueues,
}

func init() { commands = append(commands, queuesCommand) }

func runQueues(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "queues")
	var cf clientFlags
	cf.register(fs)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	switch {
	case fs.NArg() == 0:
		qs, err := c.Queues(ctx)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(env.Stdout, api.QueueList{Queues: qs})
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "QUEUE\tPAUSED\tQUEUED\tRUNNING\tSUCCEEDED\tFAILED\tCANCELED")
		for _, q := range qs {
			n := q.Counts
			fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d\t%d\t%d\n", q.Name, q.Paused, n[api.StateQueued],
				n[api.StateRunning], n[api.StateSucceeded], n[api.StateFailed], n[api.StateCanceled])
		}
		return tw.Flush()
	case fs.NArg() == 2 && (fs.Arg(0) == "pause" || fs.Arg(0) == "resume"):
		action, name := fs.Arg(0), fs.Arg(1)
		var q *api.Queue
		if action == "pause" {
			q, err = c.PauseQueue(ctx, name)
		} else {
			q, err = c.ResumeQueue(ctx, name)
		}
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(env.Stdout, q)
		}
		state := "resumed"
		if q.Paused {
			state = "paused"
		}
		fmt.Fprintf(env.Stdout, "queue %s %s\n", q.Name, state)
		return nil
	default:
		return usageError("want no argument, \"pause NAME\" or \"resume NAME\"")
	}
}
