package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jobd/jobd/api"
)

var queuesCommand = &Command{
	Name: "queues",
	Usage: "jobd queues [flags] [pause NAME | resume NAME]\n" +
		"       jobd queues set [flags] NAME [--global-limit N] [--partition-limit N] [--rate LIMIT/PERIOD] [--rate-by partition_key|queue]\n" +
		"                   [--rate-burst N] [--throttle-by partition_key|queue] [--clear]",
	Summary: "list queues with their job counts, limits and throttles; pause or resume one; set its limits",
	Run:     runQueues,
}

func init() { commands = append(commands, queuesCommand) }

func runQueues(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 && args[0] == "set" {
		return setQueueLimits(ctx, env, args[1:])
	}
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
		fmt.Fprintln(tw, "QUEUE\tPAUSED\tQUEUED\tRUNNING\tSUCCEEDED\tFAILED\tCANCELED\tLIMITS\tTHROTTLED")
		for _, q := range qs {
			n := q.Counts
			fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", q.Name, q.Paused, n[api.StateQueued],
				n[api.StateRunning], n[api.StateSucceeded], n[api.StateFailed], n[api.StateCanceled],
				limitsText(q.QueueLimits), throttleText(q))
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
	case fs.NArg() > 0 && fs.Arg(0) == "set":
		return usageError("put the flags of queues set after \"set\"")
	default:
		return usageError("want no argument, \"pause NAME\", \"resume NAME\" or \"set NAME [flags]\"")
	}
}

// limitEdits are the flags of queues set that were given (on the command
// line or in the environment), applied to the queue's current limits.
type limitEdits struct {
	clear                       bool
	globalLimit, partitionLimit *int
	rate                        **api.QueueRate // nil: unchanged; *nil: none
	rateBy                      *string
	rateBurst                   *int
	throttleBy                  *string
}

func (e *limitEdits) register(fs *flag.FlagSet) {
	intFlag := func(name, usage string, dst **int) {
		fs.Func(name, usage, func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("not a count: %q", v)
			}
			*dst = &n
			return nil
		})
	}
	byFlag := func(name, usage string, dst **string) {
		fs.Func(name, usage, func(v string) error {
			switch v {
			case "queue", "":
				v = ""
			case "partition_key":
			default:
				return fmt.Errorf("want partition_key or queue, got %q", v)
			}
			*dst = &v
			return nil
		})
	}
	intFlag("global-limit", "most running jobs of the queue across every node; 0 for none", &e.globalLimit)
	intFlag("partition-limit", "most running jobs per partition_key; 0 for none", &e.partitionLimit)
	fs.Func("rate", "most job starts per period, as LIMIT/PERIOD (100/1m, 20/s); none for no rate", func(v string) error {
		r, err := parseRate(v)
		if err != nil {
			return err
		}
		e.rate = &r
		return nil
	})
	byFlag("rate-by", "partition_key: a rate per partition_key; queue: one rate for the queue", &e.rateBy)
	intFlag("rate-burst", "starts the rate allows at once after a quiet spell (default 1: smooth)", &e.rateBurst)
	byFlag("throttle-by", "partition_key: a job's throttle stops its partition only; queue: the whole queue", &e.throttleBy)
	fs.BoolVar(&e.clear, "clear", false, "clear every limit first (alone: the queue is limited no more)")
}

// parseRate reads LIMIT/PERIOD; a period without a number is one of its
// unit ("s": "1s"). "none" is no rate.
func parseRate(v string) (*api.QueueRate, error) {
	if v == "none" {
		return nil, nil
	}
	limit, period, ok := strings.Cut(v, "/")
	n, err := strconv.Atoi(limit)
	if !ok || err != nil || n < 1 {
		return nil, fmt.Errorf("want LIMIT/PERIOD such as 100/1m, got %q", v)
	}
	if period != "" && (period[0] < '0' || period[0] > '9') {
		period = "1" + period
	}
	d, err := time.ParseDuration(period)
	if err != nil {
		return nil, fmt.Errorf("want LIMIT/PERIOD such as 100/1m, got %q: %v", v, err)
	}
	return &api.QueueRate{Limit: n, Period: api.Duration(d)}, nil
}

// apply returns l changed by the edits, or a usage error for a rate's
// member without a rate.
func (e *limitEdits) apply(l api.QueueLimits) (api.QueueLimits, error) {
	if e.clear {
		l = api.QueueLimits{}
	}
	if e.globalLimit != nil {
		l.GlobalLimit = *e.globalLimit
	}
	if e.partitionLimit != nil {
		l.PartitionLimit = *e.partitionLimit
	}
	if e.throttleBy != nil {
		l.ThrottleBy = *e.throttleBy
	}
	if e.rate != nil {
		var keep api.QueueRate
		if l.Rate != nil {
			keep = *l.Rate
		}
		l.Rate = *e.rate
		if l.Rate != nil {
			r := *l.Rate
			r.By, r.Burst = keep.By, keep.Burst
			l.Rate = &r
		}
	}
	if e.rateBy != nil || e.rateBurst != nil {
		if l.Rate == nil {
			return l, usageError("--rate-by and --rate-burst need a rate: give --rate")
		}
		r := *l.Rate
		if e.rateBy != nil {
			r.By = *e.rateBy
		}
		if e.rateBurst != nil {
			r.Burst = *e.rateBurst
		}
		l.Rate = &r
	}
	return l, nil
}

func (e *limitEdits) none() bool {
	return !e.clear && e.globalLimit == nil && e.partitionLimit == nil && e.rate == nil &&
		e.rateBy == nil && e.rateBurst == nil && e.throttleBy == nil
}

// setQueueLimits: jobd queues set NAME [flags]. It reads the queue's
// limits, changes those its flags name (all of them first with --clear)
// and writes them back whole (PUT /api/v1/queues/{name}).
func setQueueLimits(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "queues set")
	var cf clientFlags
	cf.register(fs)
	var edits limitEdits
	edits.register(fs)
	// Flags may come before NAME and after it.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError("%v", err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError("queues set wants a queue NAME")
	}
	name := rest[0]
	if err := parseFlags(fs, env, rest[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if edits.none() {
		return usageError("nothing to set: give a limit's flag, or --clear")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	qs, err := c.Queues(ctx)
	if err != nil {
		return err
	}
	var current api.QueueLimits
	for _, q := range qs {
		if q.Name == name {
			current = q.QueueLimits
		}
	}
	limits, err := edits.apply(current)
	if err != nil {
		return err
	}
	q, err := c.SetQueueLimits(ctx, name, limits)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, q)
	}
	fmt.Fprintf(env.Stdout, "queue %s limits: %s\n", q.Name, limitsText(q.QueueLimits))
	return nil
}

// limitsText shows a queue's limits in one column: "none", or
// "global_limit=5 rate=100/1m by=partition_key".
func limitsText(l api.QueueLimits) string {
	var parts []string
	if l.GlobalLimit > 0 {
		parts = append(parts, fmt.Sprintf("global_limit=%d", l.GlobalLimit))
	}
	if l.PartitionLimit > 0 {
		parts = append(parts, fmt.Sprintf("partition_limit=%d", l.PartitionLimit))
	}
	if r := l.Rate; r != nil {
		s := fmt.Sprintf("rate=%d/%s", r.Limit, shortDuration(time.Duration(r.Period)))
		if r.By != "" {
			s += " rate_by=" + r.By
		}
		if r.Burst > 1 {
			s += fmt.Sprintf(" burst=%d", r.Burst)
		}
		parts = append(parts, s)
	}
	if l.ThrottleBy != "" {
		parts = append(parts, "throttle_by="+l.ThrottleBy)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// throttleText shows a queue's throttles in one column: "-", "until
// TIME", "3 partitions", or both.
func throttleText(q api.Queue) string {
	var parts []string
	if q.ThrottledUntil != nil {
		parts = append(parts, "until "+formatTime(*q.ThrottledUntil))
	}
	if n := len(q.ThrottledPartitions); n > 0 {
		what := "partitions"
		if n == 1 {
			what = "partition"
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, what))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// shortDuration is d without its zero trailing units: "1m", not "1m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
