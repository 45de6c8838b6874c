package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

var workerCommand = &Command{
	Name:    "worker",
	Usage:   "jobd worker --server URL --key KEY --queue Q [--concurrency N] --exec CMD",
	Summary: "run a remote worker: CMD once per job claimed over HTTP",
	Run:     runWorker,
}

func init() { commands = append(commands, workerCommand) }

// Limits of what jobd worker keeps of a command's output.
const (
	maxResultBytes = 1 << 20 // stdout, the job's result
	stderrTail     = 20      // lines of stderr kept for a failure's error
)

// How a command says the downstream its job calls is overloaded: it
// fails with exitTempFail (EX_TEMPFAIL of sysexits.h), which throttles
// for --throttle, or fails after a stderr line "jobd-throttle: 30s",
// which throttles for that long (the last such line wins).
const (
	exitTempFail    = 75
	throttlePrefix  = "jobd-throttle:"
	defaultThrottle = 30 * time.Second
)

type workerFlags struct {
	clientFlags
	queues          listFlag
	concurrency     int
	exec            string
	claimWait       time.Duration
	heartbeat       time.Duration
	shutdownTimeout time.Duration
	throttle        time.Duration
	logLevel        string
}

func runWorker(ctx context.Context, env *Env, args []string) error {
	var f workerFlags
	fs := newFlagSet(env, "worker")
	f.clientFlags.register(fs)
	fs.Var(&f.queues, "queue", "queue to claim from (repeatable, or comma-separated)")
	fs.IntVar(&f.concurrency, "concurrency", 1, "jobs run at once")
	fs.StringVar(&f.exec, "exec", "", "command run once per job by /bin/sh -c")
	fs.DurationVar(&f.claimWait, "claim-wait", 30*time.Second, "long-poll of one claim")
	fs.DurationVar(&f.heartbeat, "heartbeat-interval", 10*time.Second, "heartbeat and lease renewal period")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 20*time.Second, "on SIGTERM, how long running commands may finish before they are killed and their jobs released (queued again, the attempt not counted)")
	fs.DurationVar(&f.throttle, "throttle", defaultThrottle, "how long a command's exit code 75 (EX_TEMPFAIL) throttles its job's queue or partition when it printed no \"jobd-throttle: DURATION\" line (0: exit code 75 is an ordinary failure)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	var queues []string
	for _, q := range f.queues {
		for _, name := range strings.Split(q, ",") {
			if name = strings.TrimSpace(name); name != "" {
				queues = append(queues, name)
			}
		}
	}
	switch {
	case len(queues) == 0:
		return usageError("--queue is required")
	case f.exec == "":
		return usageError("--exec is required")
	case f.key == "":
		return usageError("--key (or JOBD_KEY) is required: a worker's API key")
	case f.concurrency < 1:
		return usageError("--concurrency must be at least 1")
	case f.throttle < 0 || f.throttle > api.MaxThrottle:
		return usageError("--throttle must be between 0 and %s", api.MaxThrottle)
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	secrets := urlSecrets(f.server)
	secrets.Add(f.key)
	logger := newLogger(env, f.logLevel, "text", secrets)
	w := client.NewWorker(c, client.WorkerConfig{
		Queues: queues, Concurrency: f.concurrency, ClaimWait: f.claimWait,
		HeartbeatInterval: f.heartbeat, ShutdownTimeout: f.shutdownTimeout, Logger: logger,
	})
	w.HandleAny(func(ctx context.Context, t *client.Task[json.RawMessage]) (json.RawMessage, error) {
		return execJob(ctx, execConfig{command: f.exec, throttle: f.throttle}, t)
	})
	logger.Info("jobd worker started", "server", f.server, "queues", strings.Join(queues, ","), "concurrency", f.concurrency)
	return w.Run(ctx)
}

// execConfig is how jobd worker runs each job's command.
type execConfig struct {
	// command is run by /bin/sh -c.
	command string
	// throttle is how long exit code exitTempFail throttles without a
	// throttle line; 0 makes that code an ordinary failure.
	throttle time.Duration
}

// execJob runs the command for one job: args on stdin, JOBD_* in the
// environment, progress, checkpoints and a throttle read from stderr,
// the result from stdout. The command runs in a process group of its
// own, killed whole when ctx ends (cancel, lost lease, shutdown).
func execJob(ctx context.Context, cfg execConfig, t *client.Task[json.RawMessage]) (json.RawMessage, error) {
	command := cfg.command
	cpFile, err := jsonFile("checkpoint", t.Job.Checkpoint)
	if err != nil {
		return nil, err
	}
	defer os.Remove(cpFile)
	prevFile, err := jsonFile("previous-result", t.Job.PreviousResult)
	if err != nil {
		return nil, err
	}
	defer os.Remove(prevFile)
	inputsFile, err := inputsJSONFile(t.Job.Inputs)
	if err != nil {
		return nil, err
	}
	defer os.Remove(inputsFile)
	resume, err := resumeFiles(t.Job)
	defer resume.remove()
	if err != nil {
		return nil, err
	}

	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(),
		"JOBD_JOB_ID="+t.Job.ID.String(),
		"JOBD_ATTEMPT="+strconv.Itoa(t.Job.Attempt),
		"JOBD_CHECKPOINT_FILE="+cpFile,
		"JOBD_RERUN="+strconv.Itoa(t.Job.Rerun),
		"JOBD_PREVIOUS_RESULT_FILE="+prevFile,
		"JOBD_SCHEDULED_FOR="+timeText(t.Job.ScheduledFor),
		"JOBD_DEADLINE="+timeText(t.Job.Deadline),
		"JOBD_INPUTS_FILE="+inputsFile,
		"JOBD_STEPS_FILE="+resume.steps,
		"JOBD_CHILDREN_FILE="+resume.children,
		"JOBD_SIGNAL_FILE="+resume.signal,
	)
	args := t.Job.Args
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	cmd.Stdin = bytes.NewReader(args)
	var stdout limitedBuffer
	stdout.limit = maxResultBytes
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, client.Permanent(fmt.Errorf("start %q: %w", command, err))
	}
	// Every stderr line is acted on before Wait, which closes the pipe.
	// A process left behind holding stderr open is killed with the group
	// when ctx ends.
	report := <-readStderr(ctx, stderr, t)
	err = cmd.Wait()
	if cause := context.Cause(ctx); cause != nil {
		return nil, fmt.Errorf("command killed: %w", cause)
	}
	if err != nil {
		msg := err.Error()
		if len(report.lines) > 0 {
			msg += ": " + strings.Join(report.lines, "\n")
		}
		failure := errors.New(msg)
		var exit *exec.ExitError
		switch {
		case report.throttle > 0:
			return nil, client.Throttle(failure, report.throttle)
		case cfg.throttle > 0 && errors.As(err, &exit) && exit.ExitCode() == exitTempFail:
			return nil, client.Throttle(failure, cfg.throttle)
		}
		return nil, failure
	}
	if stdout.over {
		return nil, client.Permanent(fmt.Errorf("stdout is over %d bytes", maxResultBytes))
	}
	out := bytes.TrimSpace(stdout.Bytes())
	if len(out) == 0 {
		return json.RawMessage(`null`), nil
	}
	if !json.Valid(out) {
		return nil, client.Permanent(fmt.Errorf("stdout is not JSON: %.200q", out))
	}
	return out, nil
}

// inputsJSONFile writes a workflow task's inputs (its dependencies'
// ends by ref, each {state, result, error}) to a new temporary file, empty
// for a job without dependencies, and returns its name.
func inputsJSONFile(inputs map[string]api.Input) (string, error) {
	var raw json.RawMessage
	if len(inputs) > 0 {
		var err error
		if raw, err = json.Marshal(inputs); err != nil {
			return "", fmt.Errorf("inputs file: %w", err)
		}
	}
	return jsonFile("inputs", raw)
}

// jsonFile writes raw (nothing for none or null) to a new temporary
// file, for a command to read, and returns its name.
func jsonFile(what string, raw json.RawMessage) (string, error) {
	f, err := os.CreateTemp("", "jobd-"+what+"-*.json")
	if err != nil {
		return "", fmt.Errorf("%s file: %w", what, err)
	}
	if len(raw) > 0 && string(raw) != "null" {
		if _, err := f.Write(raw); err != nil {
			f.Close()
			os.Remove(f.Name())
			return "", fmt.Errorf("%s file: %w", what, err)
		}
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("%s file: %w", what, err)
	}
	return f.Name(), nil
}

// timeText is t in RFC 3339, UTC, or "" for none.
func timeText(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// stderrReport is what a command's stderr said besides its progress and
// checkpoints: its last other lines, and the delay of its last throttle
// line (0 for none).
type stderrReport struct {
	lines    []string
	throttle time.Duration
}

// readStderr reads the command's stderr until it closes, acting on its
// progress and checkpoint lines, and sends its report when done.
func readStderr(ctx context.Context, r io.Reader, t *client.Task[json.RawMessage]) <-chan stderrReport {
	done := make(chan stderrReport, 1)
	go func() {
		var rep stderrReport
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if d, ok := throttleLine(line); ok {
				rep.throttle = d
				continue
			}
			if !reportLine(ctx, line, t) {
				rep.lines = append(rep.lines, line)
				if len(rep.lines) > stderrTail {
					rep.lines = rep.lines[1:]
				}
			}
		}
		_, _ = io.Copy(io.Discard, r) // a line over 1 MiB: drain the rest
		done <- rep
	}()
	return done
}

// throttleLine reads a "jobd-throttle: 30s" line: a Go duration above
// zero, capped at api.MaxThrottle. Any other line, a bad duration
// included, is not one.
func throttleLine(line string) (time.Duration, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), throttlePrefix)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	if err != nil || d <= 0 {
		return 0, false
	}
	return min(d, api.MaxThrottle), true
}

// reportLine acts on a "progress D/T [phase]" or "checkpoint <json>" line
// and reports whether it was one.
func reportLine(ctx context.Context, line string, t *client.Task[json.RawMessage]) bool {
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch word {
	case "progress":
		frac, phase, _ := strings.Cut(strings.TrimSpace(rest), " ")
		d, tot, ok := strings.Cut(frac, "/")
		done, err1 := strconv.ParseInt(d, 10, 64)
		total, err2 := strconv.ParseInt(tot, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return false
		}
		_ = t.SetProgress(ctx, done, total, strings.TrimSpace(phase)) // a lost lease cancels ctx
		return true
	case "checkpoint":
		raw := json.RawMessage(strings.TrimSpace(rest))
		if !json.Valid(raw) {
			return false
		}
		_ = t.SaveCheckpoint(ctx, raw)
		return true
	}
	return false
}

// limitedBuffer keeps the first limit bytes written to it.
type limitedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.limit - b.buf.Len(); len(p) > room {
		b.over = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Bytes()
}
