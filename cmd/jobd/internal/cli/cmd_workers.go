package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/jobd/jobd/api"
)

var workersCommand = &Command{
	Name: "workers",
	Usage: "jobd workers [flags] [list]\n" +
		"       jobd workers [flags] create --name NAME [--capabilities gpu,cuda] [--queues video.*,audio] [--metadata JSON]\n" +
		"       jobd workers [flags] disable|enable|delete WORKER-ID",
	Summary: "manage the registry of remote workers (needs the admin secret or an admin key)",
	Run:     runWorkers,
}

func init() { commands = append(commands, workersCommand) }

func runWorkers(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "workers")
	var cf clientFlags
	cf.register(fs)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	sub, rest := "list", fs.Args()
	if len(rest) > 0 {
		sub, rest = rest[0], rest[1:]
	}
	switch sub {
	case "list":
		if len(rest) > 0 {
			return usageError("workers list takes no argument")
		}
		return listWorkers(ctx, env, &cf)
	case "create":
		return createWorker(ctx, env, &cf, rest)
	case "disable", "enable", "delete":
		if len(rest) != 1 {
			return usageError("workers %s wants one WORKER-ID", sub)
		}
		return workerAction(ctx, env, &cf, sub, rest[0])
	default:
		return usageError("unknown workers command %q: want list, create, disable, enable or delete", sub)
	}
}

func listWorkers(ctx context.Context, env *Env, cf *clientFlags) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	ws, err := c.Workers(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, api.WorkerList{Workers: ws})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tCAPABILITIES\tQUEUES\tRUNNING\tDONE\tFAILED\tLAST HEARTBEAT")
	for _, w := range ws {
		beat := ""
		if w.LastHeartbeatAt != nil {
			beat = formatTime(*w.LastHeartbeatAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", w.ID, w.Name, w.Status, strings.Join(w.Capabilities, ","),
			queuesText(w.Queues), w.CurrentJobs, w.JobsDone, w.JobsFailed, beat)
	}
	return tw.Flush()
}

func createWorker(ctx context.Context, env *Env, cf *clientFlags, args []string) error {
	fs := newFlagSet(env, "workers create")
	name := fs.String("name", "", "the worker's name (required)")
	caps := fs.String("capabilities", "", "comma-separated capabilities (jobs that require them go to it)")
	queues := fs.String("queues", "", "comma-separated queues it may claim from: names, and prefixes NAME.* (default: every queue but jobd's own)")
	meta := fs.String("metadata", "", "a JSON object kept with it")
	if err := fs.Parse(args); err != nil {
		return usageError("%v", err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if *name == "" {
		return usageError("workers create needs --name")
	}
	req := api.WorkerRequest{Name: *name, Capabilities: splitList(*caps), Queues: splitList(*queues)}
	if *meta != "" {
		if !json.Valid([]byte(*meta)) {
			return usageError("--metadata is not JSON")
		}
		req.Metadata = json.RawMessage(*meta)
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	w, err := c.CreateWorker(ctx, req)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, w)
	}
	fmt.Fprintf(env.Stdout, "worker %s (%s) registered, queues %s\n", w.WorkerID, w.Worker.Name, queuesText(w.Worker.Queues))
	fmt.Fprintf(env.Stdout, "%s\n", w.APIKey)
	fmt.Fprintln(env.Stderr, "Store this key now: it is not shown again.")
	return nil
}

func workerAction(ctx context.Context, env *Env, cf *clientFlags, action, id string) error {
	c, err := cf.client()
	if err != nil {
		return err
	}
	var w *api.Worker
	switch action {
	case "disable":
		w, err = c.DisableWorker(ctx, id)
	case "enable":
		w, err = c.EnableWorker(ctx, id)
	default:
		err = c.DeleteWorker(ctx, id)
	}
	if err != nil {
		return err
	}
	switch {
	case cf.json && w != nil:
		return printJSON(env.Stdout, w)
	case !cf.json:
		fmt.Fprintf(env.Stdout, "worker %s %sd\n", id, action)
	}
	return nil
}
