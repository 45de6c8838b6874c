package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/job"
)

// TestWorkerExecTimedOut: a --exec command that sleeps forever is killed,
// its whole process group, at its job's deadline; the job ends its
// attempt "timed-out", and its retry runs (and, this time, succeeds).
func TestWorkerExecTimedOut(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	body := `#!/bin/sh
if [ "$JOBD_ATTEMPT" = 1 ]; then
  sleep 1000 &
  echo $! > "$PIDS/sleep"
  echo $$ > "$PIDS/shell"
  echo started > "$STARTED"
  wait
fi
printf '{"attempt":%s,"deadline":"%s"}' "$JOBD_ATTEMPT" "$JOBD_DEADLINE"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		_, _, key := s.registerKey(t, "exec")
		pids := t.TempDir()
		started := startedFIFO(t)
		j := s.submit(t, api.SubmitRequest{Queue: "media", Kind: "encode", MaxAttempts: 2, Timeout: api.Duration(time.Second)})

		ctx, stop := context.WithCancel(t.Context())
		var stderr strings.Builder
		done := make(chan int, 1)
		go func() {
			env := &Env{Stdin: strings.NewReader(""), Stdout: &strings.Builder{}, Stderr: &lockedWriter{w: &stderr},
				Getenv: func(string) string { return "" }}
			done <- Main(ctx, []string{"worker", "--server", s.url, "--key", key, "--queue", "media",
				"--exec", "PIDS=" + pids + " STARTED=" + started.path + " " + script,
				"--claim-wait", "1s", "--heartbeat-interval", "200ms"}, env)
		}()
		started.wait(t, "the command's first attempt to start")
		first := s.waitFor(t, j.ID, "running its first attempt", func(j *job.Job) bool { return j.Attempt == 1 })
		if first.Deadline == nil {
			t.Fatal("the running attempt has no deadline")
		}
		final := s.waitFor(t, j.ID, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		stop()
		if code := <-done; code != 0 {
			t.Fatalf("jobd worker exit %d: %s", code, stderr.String())
		}
		if final.Attempt != 2 {
			t.Fatalf("attempt %d, want the retry's, 2", final.Attempt)
		}
		for _, name := range []string{"shell", "sleep"} {
			raw, err := os.ReadFile(filepath.Join(pids, name))
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
			if err != nil {
				t.Fatal(err)
			}
			if alive(pid) {
				t.Errorf("the first attempt's %s (pid %d) still runs: its process group was not killed", name, pid)
			}
		}
		wantTimedOut(t, s, j.ID, *first.Deadline)
	})
}

// TestRemoteWorkerTimedOut: a remote worker whose handler ignores its
// context, and which keeps heartbeating, loses the job at its deadline:
// its heartbeats no longer hold the lease, its late outcome is refused
// (409), the job's attempt ends "timed-out" and the retry runs.
func TestRemoteWorkerTimedOut(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		_, c, _ := s.registerKey(t, "stubborn")
		j := s.submit(t, api.SubmitRequest{Queue: "q", Kind: "slow", MaxAttempts: 2, Timeout: api.Duration(time.Second)})
		release := make(chan struct{})
		attempts := make(chan int, 2)
		w := client.NewWorker(c, client.WorkerConfig{Queues: []string{"q"}, ClaimWait: time.Second, HeartbeatInterval: 100 * time.Millisecond})
		client.Handle(w, "slow", func(ctx context.Context, task *client.Task[map[string]any]) (string, error) {
			attempts <- task.Job.Attempt
			if task.Job.Attempt == 1 {
				if d, ok := ctx.Deadline(); !ok || task.Job.Deadline == nil || !d.Equal(*task.Job.Deadline) {
					t.Errorf("the handler's context deadline %v %v, want the job's %v", d, ok, task.Job.Deadline)
				}
				<-release // ignores its context
				return "late", nil
			}
			return "retried", nil
		})
		ctx, stop := context.WithCancel(t.Context())
		runDone := make(chan error, 1)
		go func() { runDone <- w.Run(ctx) }()
		defer func() {
			stop()
			if err := <-runDone; err != nil {
				t.Errorf("worker: %v", err)
			}
		}()
		if a := <-attempts; a != 1 {
			t.Fatalf("first attempt %d", a)
		}
		first := s.waitFor(t, j.ID, "running", func(j *job.Job) bool { return j.State == job.StateRunning && j.Deadline != nil })
		// The attempt ends at its deadline, the heartbeats going on.
		s.waitFor(t, j.ID, "timed out", func(j *job.Job) bool { return j.Attempt == 1 && j.State == job.StateQueued })
		close(release) // its late success is refused
		final := s.waitFor(t, j.ID, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		if final.Attempt != 2 || string(final.Result) != `"retried"` {
			t.Fatalf("attempt %d result %s, want the retry's", final.Attempt, final.Result)
		}
		late, err := c.Complete(t.Context(), j.ID, first.LeaseToken, json.RawMessage(`"late"`))
		if err == nil || !strings.Contains(err.Error(), "409") && !strings.Contains(err.Error(), "lease") {
			t.Fatalf("a late complete of the timed-out attempt: %+v %v, want 409", late, err)
		}
		wantTimedOut(t, s, j.ID, *first.Deadline)
	})
}

// alive reports whether process pid runs: it exists and is not a zombie
// (a killed process whose parent has not reaped it yet).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: it exists
	}
	// pid (comm) STATE ...: comm may hold spaces, the state follows its ")".
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// wantTimedOut checks the journal of a job whose first attempt timed out
// at deadline and whose second succeeded.
func wantTimedOut(t *testing.T, s *workerServer, id [16]byte, deadline time.Time) {
	t.Helper()
	evs, err := s.store.JobEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	kinds := make([]job.EventKind, len(evs))
	for i, e := range evs {
		kinds[i] = e.Kind
	}
	want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventTimedOut, job.EventClaimed, job.EventSucceeded}
	if !slices.Equal(kinds, want) {
		t.Fatalf("journal %v, want %v", kinds, want)
	}
	to := evs[2]
	if to.At.Before(deadline) || to.Detail != "timed out after 1s" || to.Attempt != 1 {
		t.Fatalf("timed-out entry %+v: want at or after the deadline %v, detail \"timed out after 1s\", attempt 1", to, deadline)
	}
}
