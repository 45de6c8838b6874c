package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jobd/jobd/api"
)

var submitCommand = &Command{
	Name:    "submit",
	Usage:   "jobd submit [flags] KIND [ARGS-JSON | -]",
	Summary: "submit a job (ARGS-JSON \"-\" reads stdin); --wait to follow it",
	Run:     runSubmit,
}

func init() { commands = append(commands, submitCommand) }

func runSubmit(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "submit")
	var cf clientFlags
	cf.register(fs)
	var req api.SubmitRequest
	var runAt string
	var delay, leaseTTL, timeout time.Duration
	var unique, wait bool
	fs.StringVar(&req.Queue, "queue", "", "queue (default \"default\")")
	fs.Func("priority", "priority, lower runs first (default 100)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not an integer: %q", v)
		}
		req.Priority = &n
		return nil
	})
	fs.StringVar(&runAt, "run-at", "", "run at this RFC 3339 time")
	fs.DurationVar(&delay, "delay", 0, "run after this delay (e.g. 5m)")
	fs.IntVar(&req.MaxAttempts, "max-attempts", 0, "attempts before the job fails (default 5)")
	fs.DurationVar(&leaseTTL, "lease-ttl", 0, "lease duration without a heartbeat (default 60s)")
	fs.DurationVar(&timeout, "timeout", 0, "hard limit of each attempt's run time (default none, or the queue's)")
	fs.StringVar(&req.LockKey, "lock-key", "", "at most one running job per lock key")
	fs.StringVar(&req.PartitionKey, "partition-key", "", "partition key, for filtering")
	fs.StringVar(&req.IdempotencyKey, "idempotency-key", "", "the same key returns the same job")
	fs.StringVar(&req.CallbackURL, "callback-url", "", "POST the job there each time it becomes final (a signed webhook)")
	fs.BoolVar(&unique, "unique", false, "return a queued or running job with the same queue, kind and args instead of a new one")
	fs.BoolVar(&wait, "wait", false, "wait for the job like jobd wait (and exit like it)")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usageError("want KIND and optionally ARGS-JSON, got %d arguments", fs.NArg())
	}
	req.Kind = fs.Arg(0)
	if fs.NArg() == 2 {
		raw, err := argsJSON(env, fs.Arg(1))
		if err != nil {
			return err
		}
		req.Args = raw
	}
	switch {
	case runAt != "" && delay != 0:
		return usageError("give --run-at or --delay, not both")
	case runAt != "":
		t, err := time.Parse(time.RFC3339Nano, runAt)
		if err != nil {
			return usageError("--run-at: want an RFC 3339 time such as 2025-01-02T15:04:05Z, got %q", runAt)
		}
		req.RunAt = &t
	case delay != 0:
		t := time.Now().Add(delay)
		req.RunAt = &t
	}
	req.LeaseTTL = api.Duration(leaseTTL)
	req.Timeout = api.Duration(timeout)
	if unique {
		req.Unique = api.UniqueActive
	}

	c, err := cf.client()
	if err != nil {
		return err
	}
	j, created, err := c.Submit(ctx, req)
	if err != nil {
		return err
	}
	if wait {
		if !cf.json {
			fmt.Fprintln(env.Stderr, submitLine(j, created))
		}
		return waitJob(ctx, env, c, j.ID, cf.json)
	}
	if cf.json {
		return printJSON(env.Stdout, j)
	}
	fmt.Fprintln(env.Stdout, submitLine(j, created))
	return nil
}

func submitLine(j *api.Job, created bool) string {
	if created {
		return fmt.Sprintf("%s created (%s)", j.ID, j.State)
	}
	return fmt.Sprintf("%s exists (%s)", j.ID, j.State)
}

// argsJSON reads the ARGS-JSON argument ("-": standard input) and checks
// that it is a JSON object.
func argsJSON(env *Env, arg string) (json.RawMessage, error) {
	raw := []byte(arg)
	if arg == "-" {
		b, err := io.ReadAll(env.Stdin)
		if err != nil {
			return nil, fmt.Errorf("read args from stdin: %w", err)
		}
		raw = b
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, usageError("ARGS-JSON must be a JSON object, e.g. '{\"ms\": 500}'")
	}
	return json.RawMessage(strings.TrimSpace(string(raw))), nil
}
