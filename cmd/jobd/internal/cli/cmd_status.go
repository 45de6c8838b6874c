package cli

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

var statusCommand = &Command{
	Name:    "status",
	Usage:   "jobd status [--server URL] [--key KEY] [--json] JOB-ID",
	Summary: "show a job: state, progress, result, error",
	Run:     runStatus,
}

func init() { commands = append(commands, statusCommand) }

func runStatus(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "status")
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
	j, err := c.Get(ctx, id)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, j)
	}
	printJob(env.Stdout, j)
	return nil
}

// The helpers below are shared by the client commands (submit, status,
// wait, cancel, retry, list, queues, keys).

// clientFlags are the flags every client command takes.
type clientFlags struct {
	server, key, caCert string
	json                bool
}

func (f *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "http://127.0.0.1:8080", "jobd server URL (https://… for a server with --tls-cert)")
	fs.StringVar(&f.key, "key", "", "API key or admin secret (prefer JOBD_KEY: flags show in ps)")
	fs.StringVar(&f.caCert, "ca-cert", "", "PEM file of the CA that signed an https:// server's certificate, instead of the system's roots")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
}

// client is the client of the flags' server. It sends a request that the
// server answers 503 (its database does not answer) again, after the
// answer's Retry-After, until the command's context ends.
func (f *clientFlags) client() (*client.Client, error) {
	var opts []client.Option
	if f.caCert != "" {
		pem, err := os.ReadFile(f.caCert)
		if err != nil {
			return nil, usageError("--ca-cert: %v", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, usageError("--ca-cert: %s holds no PEM certificate", f.caCert)
		}
		opts = append(opts, client.WithCACert(pem))
	}
	c, err := client.New(f.server, f.key, opts...)
	if err != nil {
		return nil, usageError("--server: %v", err)
	}
	return c, nil
}

// jobIDArg reads the one positional JOB-ID argument.
func jobIDArg(fs *flag.FlagSet) (uuid.UUID, error) {
	if fs.NArg() != 1 {
		return uuid.Nil, usageError("want exactly one JOB-ID argument, got %d", fs.NArg())
	}
	id, err := uuid.Parse(fs.Arg(0))
	if err != nil {
		return uuid.Nil, usageError("JOB-ID %q is not a job id (a UUID)", fs.Arg(0))
	}
	return id, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJob writes a job as aligned "field: value" lines.
func printJob(w io.Writer, j *api.Job) {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", j.ID.String())
	row("queue", j.Queue)
	row("kind", j.Kind)
	state := string(j.State)
	if j.CancelRequested && !j.State.Final() {
		state += " (cancel requested)"
	}
	row("state", state)
	row("attempt", fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts))
	row("priority", fmt.Sprint(j.Priority))
	row("progress", progressText(j.Progress))
	row("args", compactJSON(j.Args))
	row("result", compactJSON(j.Result))
	row("error", j.Error)
	row("lock key", j.LockKey)
	row("partition key", j.PartitionKey)
	row("idempotency key", j.IdempotencyKey)
	row("run at", formatTime(j.RunAt))
	row("created", formatTime(j.CreatedAt))
	if j.StartedAt != nil {
		row("started", formatTime(*j.StartedAt))
	}
	if j.FinishedAt != nil {
		row("finished", formatTime(*j.FinishedAt))
	}
	row("updated", formatTime(j.UpdatedAt))
	_ = tw.Flush()
}

// progressText is "phase done/total (pct%)", or "" with nothing reported.
func progressText(p api.Progress) string {
	var parts []string
	if p.Phase != "" {
		parts = append(parts, p.Phase)
	}
	if p.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d (%d%%)", p.Done, p.Total, p.Done*100/p.Total))
	} else if p.Done > 0 {
		parts = append(parts, fmt.Sprint(p.Done))
	}
	return strings.Join(parts, " ")
}

func compactJSON(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return ""
	}
	const max = 200
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format(time.RFC3339)
}
