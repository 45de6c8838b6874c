package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// preferWindow is the test servers' prefer window: short, so that the
// GPU preference test waits it out.
const preferWindow = 2 * time.Second

// hourlyQueue is the queue whose backoff, on the test servers, is an
// hour; every other queue retries at once.
const hourlyQueue = "hourly"

// testPolicy is the engine's policy with the test servers' backoff
// (retryDelay).
type testPolicy struct{ *engine.Engine }

// RetryDelay is retryDelay.
func (testPolicy) RetryDelay(queue string, attempt int) time.Duration {
	return retryDelay(queue, attempt)
}

// retryDelay is the test servers' backoff of the queues (see hourlyQueue).
func retryDelay(queue string, _ int) time.Duration {
	if queue == hourlyQueue {
		return time.Hour
	}
	return 0
}

// workerServer is a jobd server as jobd serve wires it (an engine without
// pools for the wake-ups and the reaper, the API on a real HTTP port)
// over a real store.
type workerServer struct {
	url   string
	store store.Store
	admin *client.Client
}

func eachWorkerServer(t *testing.T, fn func(t *testing.T, s *workerServer)) {
	eachProxiedWorkerServer(t, nil, func(t *testing.T, s *workerServer, _ proxy) { fn(t, s) })
}

// proxy stands between a test's worker server and its callers.
type proxy interface {
	wrap(h http.Handler) http.Handler
}

// eachProxiedWorkerServer is eachWorkerServer whose API each server
// serves through a proxy of its own, newProxy's (none when nil).
func eachProxiedWorkerServer(t *testing.T, newProxy func() proxy, fn func(t *testing.T, s *workerServer, p proxy)) {
	t.Parallel()
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := teststore.Open(t, d)
			st = storewatch.Wrap(st)
			eng, err := engine.New(engine.Config{Store: st, Listen: true, Logger: slog.New(slog.DiscardHandler), ReaperInterval: 100 * time.Millisecond, PreferWindow: preferWindow})
			if err != nil {
				t.Fatal(err)
			}
			ectx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = eng.Run(ectx) }()
			workers, err := remote.New(remote.Config{Store: st, Policy: testPolicy{eng}, PreferWindow: preferWindow,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			h, err := httpapi.New(httpapi.Config{Store: st, AdminSecret: "admin-secret", Remote: workers})
			if err != nil {
				t.Fatal(err)
			}
			var p proxy
			if newProxy != nil {
				p = newProxy()
				h = p.wrap(h)
			}
			srv := httptest.NewServer(h)
			t.Cleanup(func() { srv.Close(); stop(); <-done })
			admin, err := client.New(srv.URL, "admin-secret")
			if err != nil {
				t.Fatal(err)
			}
			fn(t, &workerServer{url: srv.URL, store: st, admin: admin}, p)
		})
	}
}

// register creates a worker and returns its id and a client with its key.
func (s *workerServer) register(t *testing.T, name string, caps ...string) (string, *client.Client) {
	id, c, _ := s.registerKey(t, name, caps...)
	return id, c
}

// registerKey is register that also returns the key.
func (s *workerServer) registerKey(t *testing.T, name string, caps ...string) (string, *client.Client, string) {
	t.Helper()
	created, err := s.admin.CreateWorker(t.Context(), api.WorkerRequest{Name: name, Capabilities: caps})
	if err != nil {
		t.Fatalf("CreateWorker: %v", err)
	}
	c, err := client.New(s.url, created.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	return created.WorkerID, c, created.APIKey
}

func (s *workerServer) submit(t *testing.T, req api.SubmitRequest) *api.Job {
	t.Helper()
	j, _, err := s.admin.Submit(t.Context(), req)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return j
}

// waitFor waits until cond holds of the job, checking it after each
// write to the server's (watched) store, and returns it.
func (s *workerServer) waitFor(t *testing.T, id uuid.UUID, what string, cond func(*job.Job) bool) *job.Job {
	t.Helper()
	var j *job.Job
	storewatch.Until(t, s.store, fmt.Sprintf("job %s %s", id, what), func() bool {
		var err error
		if j, err = s.store.JobGet(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return cond(j)
	})
	return j
}

// fifo is a named pipe a command writes a line to, to say it got to
// that point; the write waits for the test to read.
type fifo struct {
	path  string
	lines chan error
}

// startedFIFO makes a FIFO in t's temporary directory and starts reading
// it.
func startedFIFO(t *testing.T) *fifo {
	t.Helper()
	f := &fifo{path: filepath.Join(t.TempDir(), "started"), lines: make(chan error, 1)}
	if err := syscall.Mkfifo(f.path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	go func() {
		r, err := os.Open(f.path) // waits for a writer
		if err == nil {
			_, err = r.Read(make([]byte, 64))
			r.Close()
		}
		f.lines <- err
	}()
	t.Cleanup(func() {
		// A reader still waiting for a writer is let go.
		if w, err := os.OpenFile(f.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	return f
}

// wait returns once a line was written to f.
func (f *fifo) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-f.lines:
		if err != nil {
			t.Fatalf("reading the FIFO for %s: %v", what, err)
		}
	case <-time.After(testsignal.Timeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestWorkerExecResumesFromCheckpoint: jobd worker --exec runs a script
// that reports progress and a checkpoint and fails; the retry sees the
// checkpoint file and succeeds.
func TestWorkerExecResumesFromCheckpoint(t *testing.T) {
	script := filepath.Join(t.TempDir(), "job.sh")
	body := `#!/bin/sh
args=$(cat)
if [ "$JOBD_ATTEMPT" = 1 ]; then
  echo "progress 1/2 encode" >&2
  echo 'checkpoint {"step":1}' >&2
  echo "disk full" >&2
  exit 3
fi
printf '{"attempt":%s,"args":%s,"saw":%s}' "$JOBD_ATTEMPT" "$args" "$(cat "$JOBD_CHECKPOINT_FILE")"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		_, _, key := s.registerKey(t, "exec")
		j := s.submit(t, api.SubmitRequest{Queue: "media", Kind: "encode", Args: json.RawMessage(`{"file":"a.mp4"}`)})

		ctx, stop := context.WithCancel(t.Context())
		var stderr strings.Builder
		done := make(chan int, 1)
		go func() {
			env := &Env{Stdin: strings.NewReader(""), Stdout: &strings.Builder{}, Stderr: &lockedWriter{w: &stderr},
				Getenv: func(string) string { return "" }}
			done <- Main(ctx, []string{"worker", "--server", s.url, "--key", key, "--queue", "media",
				"--exec", script, "--claim-wait", "2s"}, env)
		}()
		final := s.waitFor(t, j.ID, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		stop()
		if code := <-done; code != 0 {
			t.Fatalf("jobd worker exit %d: %s", code, stderr.String())
		}
		var res struct {
			Attempt int
			Args    map[string]string
			Saw     map[string]int
		}
		if err := json.Unmarshal(final.Result, &res); err != nil {
			t.Fatalf("result %s: %v", final.Result, err)
		}
		if res.Attempt != 2 || res.Args["file"] != "a.mp4" || res.Saw["step"] != 1 {
			t.Fatalf("result %s: want attempt 2 with the args and the checkpoint {\"step\":1}", final.Result)
		}
		if final.Progress.Phase != "encode" || final.Progress.Done != 1 || final.Progress.Total != 2 {
			t.Errorf("progress %+v, want encode 1/2", final.Progress)
		}
		evs, err := s.store.JobEvents(context.Background(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		var retried *job.Event
		for i := range evs {
			if evs[i].Kind == job.EventRetried {
				retried = &evs[i]
			}
		}
		if retried == nil || !strings.Contains(retried.Detail, "disk full") {
			t.Errorf("journal %+v: want a retried event with the script's last stderr line", evs)
		}
	})
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestHelperJobdProcess is not a test: TestWorkerKilledMidJob runs the
// test binary as a jobd process with it.
func TestHelperJobdProcess(t *testing.T) {
	args := os.Getenv("JOBD_TEST_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process only")
	}
	env := &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	os.Exit(Main(context.Background(), strings.Split(args, "\x1f"), env))
}

// TestWorkerKilledMidJob: a jobd worker process killed with SIGKILL while
// its command runs; once the lease expires a second worker finishes the
// job, and the first worker's late complete gets 409.
func TestWorkerKilledMidJob(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		_, _, key := s.registerKey(t, "first")
		j := s.submit(t, api.SubmitRequest{Queue: "q", Kind: "slow", LeaseTTL: api.Duration(time.Second)})
		// The command says it started on a FIFO: its write waits for the
		// test to read.
		started := startedFIFO(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperJobdProcess$")
		cmd.Env = append(os.Environ(), "JOBD_TEST_HELPER_ARGS="+strings.Join([]string{
			"worker", "--server", s.url, "--key", key, "--queue", "q",
			"--exec", "echo started > " + started.path + "; sleep 3", "--heartbeat-interval", "200ms"}, "\x1f"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		first := s.waitFor(t, j.ID, "claimed by the first worker", func(j *job.Job) bool { return j.State == job.StateRunning })
		started.wait(t, "the command to start")
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()

		// A second worker, in this process, takes the job once the lease
		// has expired and the reaper returned it.
		_, second := s.register(t, "second")
		w := client.NewWorker(second, client.WorkerConfig{Queues: []string{"q"}, ClaimWait: time.Second})
		client.Handle(w, "slow", func(ctx context.Context, task *client.Task[map[string]any]) (string, error) {
			return "done by the second", nil
		})
		ctx, stop := context.WithCancel(t.Context())
		runDone := make(chan error, 1)
		go func() { runDone <- w.Run(ctx) }()
		final := s.waitFor(t, j.ID, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		stop()
		if err := <-runDone; err != nil {
			t.Fatalf("second worker: %v", err)
		}
		if final.Attempt != 2 || string(final.Result) != `"done by the second"` {
			t.Fatalf("job attempt %d result %s, want attempt 2 by the second worker", final.Attempt, final.Result)
		}
		late, err := client.New(s.url, key)
		if err != nil {
			t.Fatal(err)
		}
		_, err = late.Complete(t.Context(), j.ID, first.LeaseToken, json.RawMessage(`"late"`))
		if !errors.Is(err, client.ErrConflict) {
			t.Fatalf("late complete: %v, want 409", err)
		}
		if got := s.waitFor(t, j.ID, "unchanged", func(*job.Job) bool { return true }); string(got.Result) != `"done by the second"` {
			t.Fatalf("the late complete changed the result to %s", got.Result)
		}
	})
}

// TestWorkerClaimRace: several workers claim one queue at once; no job is
// handed to two of them.
func TestWorkerClaimRace(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		const jobs, workers = 60, 4
		for range jobs {
			s.submit(t, api.SubmitRequest{Queue: "race", Kind: "k"})
		}
		var (
			mu   sync.Mutex
			seen = map[uuid.UUID]string{}
			wg   sync.WaitGroup
		)
		for i := range workers {
			_, c := s.register(t, fmt.Sprint("racer-", i))
			wg.Go(func() {
				for {
					got, err := c.Claim(context.Background(), []string{"race"}, 3, 0)
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, j := range got {
						if other, dup := seen[j.ID]; dup {
							t.Errorf("job %s claimed by %s and worker %d", j.ID, other, i)
						}
						seen[j.ID] = fmt.Sprint(i)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != jobs {
			t.Fatalf("%d jobs claimed, want %d", len(seen), jobs)
		}
	})
}

// TestWorkerPrefersGPU: with an idle GPU worker online, a CPU worker does
// not take a job preferring a GPU until the prefer window has passed; the
// GPU worker gets such a job at once.
func TestWorkerPrefersGPU(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		_, gpu := s.register(t, "gpu-box", "gpu")
		_, cpu := s.register(t, "cpu-box")
		ctx := t.Context()
		if _, err := gpu.WorkerHeartbeat(ctx, "idle", nil); err != nil {
			t.Fatal(err)
		}
		first := s.submit(t, api.SubmitRequest{Queue: "v", Kind: "transcode", Prefers: []string{"gpu"}})
		if got, err := cpu.Claim(ctx, []string{"v"}, 1, 0); err != nil || len(got) != 0 {
			t.Fatalf("CPU claim inside the window: %d jobs, %v; want none", len(got), err)
		}
		got, err := gpu.Claim(ctx, []string{"v"}, 1, 0)
		if err != nil || len(got) != 1 || got[0].ID != first.ID {
			t.Fatalf("GPU claim: %v, %v; want the job", got, err)
		}
		if got[0].LeaseToken == uuid.Nil || got[0].LeaseExpiresAt == nil || got[0].Attempt != 1 ||
			len(got[0].Prefers) != 1 {
			t.Fatalf("claimed job %+v: want lease token, expiry, attempt 1 and prefers", got[0])
		}
		if _, err := gpu.WorkerHeartbeat(ctx, "idle", nil); err != nil {
			t.Fatal(err)
		}

		second := s.submit(t, api.SubmitRequest{Queue: "v", Kind: "transcode", Prefers: []string{"gpu"}})
		if got, err := cpu.Claim(ctx, []string{"v"}, 1, 0); err != nil || len(got) != 0 {
			t.Fatalf("CPU claim inside the window: %d jobs, %v; want none", len(got), err)
		}
		// The CPU worker long-polls; the window passes while it waits.
		deadline := time.Now().Add(15 * time.Second)
		for {
			got, err := cpu.Claim(ctx, []string{"v"}, 1, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 1 {
				if got[0].ID != second.ID {
					t.Fatalf("CPU worker got %s, want %s", got[0].ID, second.ID)
				}
				if !got[0].StartedAt.After(second.RunAt.Add(preferWindow - 50*time.Millisecond)) {
					t.Fatalf("CPU worker took the job at %s, inside the window from %s", got[0].StartedAt, second.RunAt)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the CPU worker never got the job after the window")
			}
		}
	})
}

// TestWorkerDisabled: a disabled worker's calls get 403 and it claims
// nothing; enabled again, it claims; deleted, its key is revoked.
func TestWorkerDisabled(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		id, c := s.register(t, "w")
		ctx := t.Context()
		j := s.submit(t, api.SubmitRequest{Queue: "d", Kind: "k"})
		if w, err := s.admin.DisableWorker(ctx, id); err != nil || w.Status != api.WorkerDisabled {
			t.Fatalf("DisableWorker: %+v, %v", w, err)
		}
		if _, err := c.Claim(ctx, []string{"d"}, 1, 0); !errors.Is(err, client.ErrForbidden) {
			t.Fatalf("claim of a disabled worker: %v, want 403", err)
		}
		if _, err := c.WorkerHeartbeat(ctx, "idle", nil); !errors.Is(err, client.ErrForbidden) {
			t.Fatalf("heartbeat of a disabled worker: %v, want 403", err)
		}
		if got, _ := s.store.JobGet(ctx, j.ID); got.State != job.StateQueued {
			t.Fatalf("job %s after a disabled worker's claim, want queued", got.State)
		}
		if _, err := s.admin.EnableWorker(ctx, id); err != nil {
			t.Fatal(err)
		}
		if got, err := c.Claim(ctx, []string{"d"}, 1, 0); err != nil || len(got) != 1 {
			t.Fatalf("claim once enabled: %d jobs, %v", len(got), err)
		}
		ws, err := s.admin.Workers(ctx)
		if err != nil || len(ws) != 1 || ws[0].CurrentJobs != 1 || ws[0].LastHeartbeatAt == nil {
			t.Fatalf("Workers = %+v, %v; want one with a current job and a heartbeat", ws, err)
		}
		if err := s.admin.DeleteWorker(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Claim(ctx, []string{"d"}, 1, 0); !errors.Is(err, client.ErrUnauthorized) {
			t.Fatalf("claim of a deleted worker: %v, want 401", err)
		}
		// The admin secret is no worker.
		if _, err := s.admin.Claim(ctx, []string{"d"}, 1, 0); !errors.Is(err, client.ErrForbidden) {
			t.Fatalf("claim with the admin secret: %v, want 403", err)
		}
	})
}
