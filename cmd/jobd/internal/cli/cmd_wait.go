package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

var waitCommand = &Command{
	Name:  "wait",
	Usage: "jobd wait [--server URL] [--key KEY] [--json] [--timeout D] JOB-ID",
	Summary: "follow a job with a live progress bar until it is final; " +
		"exit 0 succeeded, 1 failed or canceled, 3 timed out",
	Run: runWait,
}

func init() { commands = append(commands, waitCommand) }

// Exit codes of jobd wait (and submit --wait) beyond 0 and the usage 2.
const (
	exitJobFailed = 1 // the job failed or was canceled
	exitTimeout   = 3 // --timeout passed before the job was final
)

func runWait(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "wait")
	var cf clientFlags
	cf.register(fs)
	timeout := fs.Duration("timeout", 0, "give up after this long (exit 3); 0 waits for ever")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	id, err := jobIDArg(fs)
	if err != nil {
		return err
	}
	if *timeout < 0 {
		return usageError("--timeout must not be negative")
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, *timeout, errWaitTimeout)
		defer cancel()
	}
	return waitJob(ctx, env, c, id, cf.json)
}

var errWaitTimeout = errors.New("timed out")

// waitJob follows job id until it is final, showing its progress, and
// returns an *ExitError unless it succeeded.
func waitJob(ctx context.Context, env *Env, c *client.Client, id uuid.UUID, jsonOut bool) error {
	var view progressView = nopView{}
	if !jsonOut {
		if isTerminal(env.Stdout) {
			view = newBarView(env.Stdout)
		} else {
			view = &lineView{w: env.Stdout, start: time.Now()}
		}
	}
	j, err := c.Wait(ctx, id, view.update)
	view.close()
	if err != nil {
		if errors.Is(context.Cause(ctx), errWaitTimeout) {
			state := "unknown"
			if j != nil {
				state = string(j.State)
			}
			return &ExitError{Code: exitTimeout, Err: fmt.Errorf("job %s is still %s: timed out", id, state)}
		}
		return err
	}
	if jsonOut {
		if err := printJSON(env.Stdout, j); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(env.Stdout, finalLine(j))
	}
	switch j.State {
	case api.StateSucceeded:
		return nil
	case api.StateFailed:
		return &ExitError{Code: exitJobFailed, Err: fmt.Errorf("job %s failed after %d attempt(s): %s", j.ID, j.Attempt, j.Error)}
	default:
		return &ExitError{Code: exitJobFailed, Err: fmt.Errorf("job %s was %s", j.ID, j.State)}
	}
}

func finalLine(j *api.Job) string {
	line := fmt.Sprintf("%s %s", j.ID, j.State)
	if j.StartedAt != nil && j.FinishedAt != nil {
		line += " in " + j.FinishedAt.Sub(*j.StartedAt).Round(time.Millisecond).String()
	}
	if r := compactJSON(j.Result); r != "" {
		line += ": " + r
	}
	return line
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressView shows a job's updates while jobd wait follows it.
type progressView interface {
	update(j api.Job)
	close()
}

type nopView struct{}

func (nopView) update(api.Job) {}
func (nopView) close()         {}

// lineView writes one plain line per update (output that is not a
// terminal: logs, pipes).
type lineView struct {
	w     io.Writer
	start time.Time
}

func (v *lineView) update(j api.Job) {
	line := fmt.Sprintf("[%s] %s", formatElapsed(time.Since(v.start)), j.State)
	if p := progressText(j.Progress); p != "" {
		line += " " + p
	}
	if j.CancelRequested && !j.State.Final() {
		line += " (cancel requested)"
	}
	fmt.Fprintln(v.w, line)
}

func (v *lineView) close() {}

// barView redraws one line with \r: state, phase, a bar, done/total and
// the elapsed time, refreshed every second even without news.
type barView struct {
	w     io.Writer
	start time.Time
	mu    sync.Mutex
	last  *api.Job
	stop  chan struct{}
	done  chan struct{}
}

func newBarView(w io.Writer) *barView {
	v := &barView{w: w, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go v.tick()
	return v
}

func (v *barView) tick() {
	defer close(v.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			v.mu.Lock()
			v.draw()
			v.mu.Unlock()
		}
	}
}

func (v *barView) update(j api.Job) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = &j
	v.draw()
}

// draw writes the line; v.mu is held.
func (v *barView) draw() {
	if v.last == nil {
		return
	}
	j := v.last
	const width = 24
	var bar string
	if p := j.Progress; p.Total > 0 {
		n := int(min(max(p.Done, 0), p.Total) * width / p.Total)
		bar = fmt.Sprintf(" [%s%s] %d/%d", strings.Repeat("#", n), strings.Repeat("-", width-n), p.Done, p.Total)
	} else if p.Done > 0 {
		bar = fmt.Sprintf(" %d", p.Done)
	}
	phase := ""
	if j.Progress.Phase != "" {
		phase = " " + j.Progress.Phase
	}
	fmt.Fprintf(v.w, "\r\x1b[K%s%s%s  %s", j.State, phase, bar, formatElapsed(time.Since(v.start)))
}

func (v *barView) close() {
	close(v.stop)
	<-v.done
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.last != nil {
		fmt.Fprintln(v.w)
	}
}

// formatElapsed is m:ss (or h:mm:ss).
func formatElapsed(d time.Duration) string {
	s := int(d.Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
