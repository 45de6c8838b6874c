package cli

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/jobd/jobd/api"
)

var schedulesCommand = &Command{
	Name: "schedules",
	Usage: "jobd schedules list | set [flags] NAME KIND [ARGS-JSON | -] | delete NAME | pause NAME | resume NAME | trigger [--idempotency-key K] NAME\n" +
		"  set's flags: --cron SPEC (required) --timezone ZONE --queue Q --priority N --max-attempts N --lease-ttl D --timeout D\n" +
		"               --lock-key K --overlap allow|skip --catch-up none|one|all --catch-up-limit N",
	Summary: "list, set, delete, pause, resume or trigger periodic jobs",
	Run:     runSchedules,
}

var rerunCommand = &Command{
	Name:    "rerun",
	Usage:   "jobd rerun [--server URL] [--key KEY] [--json] [--args JSON] JOB-ID",
	Summary: "run a finished job again; its result stays readable until a worker claims it",
	Run:     runRerun,
}

func init() { commands = append(commands, schedulesCommand, rerunCommand) }

func runSchedules(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageError("want an action: list, set, delete, pause, resume or trigger")
	}
	action, args := args[0], args[1:]
	fs := newFlagSet(env, "schedules "+action)
	var cf clientFlags
	cf.register(fs)
	switch action {
	case "list":
		return listSchedules(ctx, env, fs, &cf, args)
	case "set":
		return setSchedule(ctx, env, fs, &cf, args)
	case "delete", "pause", "resume", "trigger":
		return scheduleAction(ctx, env, fs, &cf, action, args)
	}
	return usageError("unknown action %q: want list, set, delete, pause, resume or trigger", action)
}

func listSchedules(ctx context.Context, env *Env, fs *flag.FlagSet, cf *clientFlags, args []string) error {
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError("list takes no argument")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	list, err := c.Schedules(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, api.ScheduleList{Schedules: list})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCRON\tTIMEZONE\tKIND\tNEXT RUN\tLAST RUN\tLAST JOB\tPAUSED\tSOURCE")
	for _, sc := range list {
		last, lastJob := "-", "-"
		if sc.LastRunAt != nil {
			last = sc.LastRunAt.Format(time.RFC3339)
		}
		if sc.LastJobID != nil {
			lastJob = sc.LastJobID.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%t\t%s\n", sc.Name, sc.Cron, sc.Timezone, sc.Job.Kind,
			sc.NextRunAt.Format(time.RFC3339), last, lastJob, sc.Paused, sc.Source)
	}
	return tw.Flush()
}

func setSchedule(ctx context.Context, env *Env, fs *flag.FlagSet, cf *clientFlags, args []string) error {
	var req api.ScheduleRequest
	var leaseTTL, timeout time.Duration
	fs.StringVar(&req.Cron, "cron", "", `cron spec: "0 3 * * *", an optional leading seconds field, @hourly, "@every 30s" (required)`)
	fs.StringVar(&req.Timezone, "timezone", "", "IANA time zone of the spec (default UTC)")
	fs.StringVar(&req.Job.Queue, "queue", "", "queue of the jobs (default \"default\")")
	fs.Func("priority", "priority of the jobs, lower runs first (default 100)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		req.Job.Priority = &n
		return nil
	})
	fs.IntVar(&req.Job.MaxAttempts, "max-attempts", 0, "attempts before a job fails (default 5)")
	fs.DurationVar(&leaseTTL, "lease-ttl", 0, "lease duration without a heartbeat (default 60s)")
	fs.DurationVar(&timeout, "timeout", 0, "hard limit of each attempt's run time (default none)")
	fs.StringVar(&req.Job.LockKey, "lock-key", "", "at most one running job per lock key")
	fs.StringVar(&req.Overlap, "overlap", "", "allow (default) or skip: no job while the last one is queued or running")
	fs.StringVar(&req.CatchUp, "catch-up", "", "after downtime: none (default), one or all")
	fs.IntVar(&req.CatchUpLimit, "catch-up-limit", 0, "most jobs of catch-up all (default 100)")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() < 2 || fs.NArg() > 3 {
		return usageError("want NAME KIND and optionally ARGS-JSON, got %d arguments", fs.NArg())
	}
	if req.Cron == "" {
		return usageError("--cron is required")
	}
	name := fs.Arg(0)
	req.Job.Kind = fs.Arg(1)
	if fs.NArg() == 3 {
		raw, err := argsJSON(env, fs.Arg(2))
		if err != nil {
			return err
		}
		req.Job.Args = raw
	}
	req.Job.LeaseTTL, req.Job.Timeout = api.Duration(leaseTTL), api.Duration(timeout)
	c, err := cf.client()
	if err != nil {
		return err
	}
	sc, created, err := c.SetSchedule(ctx, name, req)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, sc)
	}
	what := "replaced"
	if created {
		what = "created"
	}
	fmt.Fprintf(env.Stdout, "schedule %s %s; next run %s\n", sc.Name, what, sc.NextRunAt.Format(time.RFC3339))
	return nil
}

func scheduleAction(ctx context.Context, env *Env, fs *flag.FlagSet, cf *clientFlags, action string, args []string) error {
	var key string
	if action == "trigger" {
		fs.StringVar(&key, "idempotency-key", "", "a later trigger with the same key returns this one's job")
	}
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("%s takes one NAME", action)
	}
	name := fs.Arg(0)
	c, err := cf.client()
	if err != nil {
		return err
	}
	var sc *api.Schedule
	switch action {
	case "delete":
		if err := c.DeleteSchedule(ctx, name); err != nil {
			return err
		}
		if !cf.json {
			fmt.Fprintf(env.Stdout, "schedule %s deleted\n", name)
		}
		return nil
	case "trigger":
		j, created, err := c.TriggerSchedule(ctx, name, key)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(env.Stdout, j)
		}
		fmt.Fprintln(env.Stdout, submitLine(j, created))
		return nil
	case "pause":
		sc, err = c.PauseSchedule(ctx, name)
	default:
		sc, err = c.ResumeSchedule(ctx, name)
	}
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, sc)
	}
	if sc.Paused {
		fmt.Fprintf(env.Stdout, "schedule %s paused\n", sc.Name)
	} else {
		fmt.Fprintf(env.Stdout, "schedule %s resumed; next run %s\n", sc.Name, sc.NextRunAt.Format(time.RFC3339))
	}
	return nil
}

func runRerun(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "rerun")
	var cf clientFlags
	cf.register(fs)
	var argsText string
	fs.StringVar(&argsText, "args", "", "new args for the job, a JSON object (\"-\" reads stdin); default its own")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	id, err := jobIDArg(fs)
	if err != nil {
		return err
	}
	var newArgs []byte
	if argsText != "" {
		if newArgs, err = argsJSON(env, argsText); err != nil {
			return err
		}
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	j, err := c.Rerun(ctx, id, newArgs)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, j)
	}
	fmt.Fprintf(env.Stdout, "%s %s (rerun %d)\n", j.ID, j.State, j.Rerun)
	return nil
}
