package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// The failure rules of jobd worker --exec are the engine's and the Go
// SDK's (issue 10, defect 7): a command that crashes fails its attempt
// retryably; a retryable failure waits its queue's backoff (the server's
// configuration); at shutdown a command that did not finish is killed
// and its job released, its attempt not counted.

// execWorker runs jobd worker --exec command on queue with extra flags
// until the returned stop is called, which returns its exit code and
// stderr.
func execWorker(t *testing.T, s *workerServer, queue, command string, flags ...string) (stop func() (int, string)) {
	t.Helper()
	_, _, key := s.registerKey(t, "exec-"+queue)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		env := &Env{Stdin: strings.NewReader(""), Stdout: &strings.Builder{}, Stderr: &lockedWriter{w: &stderr},
			Getenv: func(string) string { return "" }}
		args := append([]string{"worker", "--server", s.url, "--key", key, "--queue", queue,
			"--exec", command, "--claim-wait", "1s"}, flags...)
		done <- Main(ctx, args, env)
	}()
	code, stopped := 0, false
	stop = func() (int, string) {
		if !stopped {
			stopped = true
			cancel()
			code = <-done
		}
		return code, stderr.String()
	}
	t.Cleanup(func() { stop() })
	return stop
}

func journalKinds(t *testing.T, s *workerServer, j *api.Job) []job.EventKind {
	t.Helper()
	evs, err := s.store.JobEvents(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]job.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

// TestWorkerExecCrashIsRetryable: a command killed by a signal (the
// crash of a program, its panic) fails the attempt retryably; the next
// attempt runs.
func TestWorkerExecCrashIsRetryable(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		j := s.submit(t, api.SubmitRequest{Queue: "crash", Kind: "k"})
		stop := execWorker(t, s, "crash", `if [ "$JOBD_ATTEMPT" = 1 ]; then kill -SEGV $$; fi; echo '"ok"'`)
		final := s.waitFor(t, j.ID, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		if code, stderr := stop(); code != 0 {
			t.Fatalf("jobd worker exit %d: %s", code, stderr)
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRetried, job.EventClaimed, job.EventSucceeded}
		if final.Attempt != 2 || !slices.Equal(journalKinds(t, s, j), want) {
			t.Fatalf("attempt %d, journal %v; want a retry, then a success", final.Attempt, journalKinds(t, s, j))
		}
	})
}

// TestWorkerExecFailureWaitsQueueBackoff: a command that exits non-zero
// fails its job retryably, after the backoff of the job's queue on the
// server (an hour for hourlyQueue), not a delay of the worker's.
func TestWorkerExecFailureWaitsQueueBackoff(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		j := s.submit(t, api.SubmitRequest{Queue: hourlyQueue, Kind: "k"})
		before := time.Now()
		execWorker(t, s, hourlyQueue, `echo "no route to host" >&2; exit 2`)
		got := s.waitFor(t, j.ID, "queued again", func(j *job.Job) bool { return j.State == job.StateQueued && j.Attempt == 1 })
		if d := got.RunAt.Sub(before); d < 50*time.Minute || d > 70*time.Minute || !strings.Contains(got.LastError, "no route to host") {
			t.Fatalf("run_at %s after the start, error %q; want the queue's hour and the command's stderr", d, got.LastError)
		}
	})
}

// TestWorkerExecShutdownReleases: jobd worker stopped while its command
// runs kills the command once --shutdown-timeout passed and releases the
// job: queued again at once, its attempt not counted (journal
// "requeued"), as the engine does.
func TestWorkerExecShutdownReleases(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		j := s.submit(t, api.SubmitRequest{Queue: "long", Kind: "k"})
		marker := filepath.Join(t.TempDir(), "started")
		stop := execWorker(t, s, "long", "touch "+marker+"; sleep 60", "--shutdown-timeout", "10ms")
		deadline := time.Now().Add(20 * time.Second)
		for _, err := os.Stat(marker); err != nil; _, err = os.Stat(marker) {
			if time.Now().After(deadline) {
				t.Fatal("the command never started")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if code, stderr := stop(); code != 0 {
			t.Fatalf("jobd worker exit %d: %s", code, stderr)
		}
		got, err := s.store.JobGet(context.Background(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRequeued}
		if got.State != job.StateQueued || got.Attempt != 0 || !slices.Equal(journalKinds(t, s, j), want) {
			t.Fatalf("after the shutdown: state %s attempt %d journal %v; want queued, attempt 0, %v",
				got.State, got.Attempt, journalKinds(t, s, j), want)
		}
	})
}
