package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

var listCommand = &Command{
	Name:    "list",
	Usage:   "jobd list [--queue Q] [--kind K] [--state S]... [--updated-since T] [--cursor C] [--limit N] [--count] [flags]",
	Summary: "list jobs, newest first (or as a feed with --updated-since)",
	Run:     runList,
}

func init() { commands = append(commands, listCommand) }

func runList(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "list")
	var cf clientFlags
	cf.register(fs)
	var opts client.ListOptions
	var since string
	var count bool
	fs.StringVar(&opts.Queue, "queue", "", "only jobs of this queue")
	fs.StringVar(&opts.Kind, "kind", "", "only jobs of this kind")
	fs.Func("state", "only jobs in this state (repeatable, or comma-separated)", func(v string) error {
		for _, s := range strings.Split(v, ",") {
			opts.States = append(opts.States, api.State(strings.TrimSpace(s)))
		}
		return nil
	})
	fs.StringVar(&opts.LockKey, "lock-key", "", "only jobs with this lock key")
	fs.StringVar(&opts.PartitionKey, "partition-key", "", "only jobs with this partition key")
	fs.StringVar(&since, "updated-since", "", "feed: jobs updated at or after this RFC 3339 time, oldest change first")
	fs.StringVar(&opts.Cursor, "cursor", "", "continue a listing (the cursor the previous page printed)")
	fs.IntVar(&opts.Limit, "limit", 50, "page size, at most 200")
	fs.BoolVar(&count, "count", false, "print only the number of matching jobs")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if opts.Limit < 1 {
		return usageError("--limit must be at least 1 (use --count for the count only)")
	}
	if since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			return usageError("--updated-since: want an RFC 3339 time, got %q", since)
		}
		opts.UpdatedSince = t
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	if count {
		n, err := c.Count(ctx, opts)
		if err != nil {
			return err
		}
		if cf.json {
			return printJSON(env.Stdout, map[string]int64{"total": n})
		}
		fmt.Fprintln(env.Stdout, n)
		return nil
	}
	page, err := c.List(ctx, opts)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, page)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tQUEUE\tKIND\tSTATE\tATTEMPT\tPROGRESS\tUPDATED")
	for _, j := range page.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Queue, j.Kind, j.State,
			j.Attempt, j.MaxAttempts, dash(progressText(j.Progress)), formatTime(j.UpdatedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%d of %d jobs", len(page.Jobs), page.Total)
	if page.NextCursor != "" {
		fmt.Fprintf(env.Stdout, "; next page: --cursor %s", page.NextCursor)
	}
	fmt.Fprintln(env.Stdout)
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
