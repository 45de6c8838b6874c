package durable

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	"github.com/jobd/jobd/internal/testutil/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.MainThen(m, func() {
		if buildDir != "" {
			_ = os.RemoveAll(buildDir)
		}
	})
}

var (
	buildOnce sync.Once
	jobdBin   string
	buildErr  error
	buildDir  string
)

// jobd returns the path of a jobd binary built once for the package's
// tests (with -race when they run with it).
func jobd(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", "..", ".."))
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, err = os.MkdirTemp("", "jobd-durable-"); err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(buildDir, "jobd")
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/jobd")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		jobdBin = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return jobdBin
}

// adminSecret is the nodes' admin credential.
const adminSecret = "durable-admin-secret"

// node is one `jobd serve` subprocess; the test ends only its own
// processes, by their ids.
type node struct {
	name, addr, log string
	cmd             *exec.Cmd
	done            chan struct{}
}

// startNode starts `jobd serve` on database as name, its output in
// dir/name.log, and waits until it serves /health; it is killed when t
// ends.
func startNode(t *testing.T, dir, name, database string, args ...string) *node {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	n := &node{name: name, addr: addr, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logFile, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"serve", "--listen", addr, "--node", name, "--database", database,
		"--admin-secret", adminSecret, "--reaper-interval", "200ms", "--log-level", "info"}, args...)
	n.cmd = exec.Command(jobd(t), all...)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JOBD_") {
			n.cmd.Env = append(n.cmd.Env, kv)
		}
	}
	if err := n.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	go func() {
		_ = n.cmd.Wait()
		logFile.Close()
		close(n.done)
	}()
	t.Cleanup(n.kill)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for {
		resp, err := hc.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n
			}
		}
		select {
		case <-n.done:
			t.Fatalf("node %s exited before it served:\n%s", name, tail(n.log))
		case <-ctx.Done():
			t.Fatalf("node %s does not serve:\n%s", name, tail(n.log))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill ends the node at once (SIGKILL) and waits for it.
func (n *node) kill() {
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

func (n *node) url() string { return "http://" + n.addr }

// tail returns the last lines of a log, for a failure message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-30):], "\n")
}

// admin returns a client of n with the admin secret.
func admin(t *testing.T, n *node) *client.Client {
	t.Helper()
	c, err := client.New(n.url(), adminSecret)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// workerOn registers a worker through n and returns a Worker of queue
// on it, with register run by the caller.
func workerOn(t *testing.T, n *node, name, queue string, concurrency int) *client.Worker {
	t.Helper()
	reg, err := admin(t, n).CreateWorker(t.Context(), api.WorkerRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(n.url(), reg.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	return client.NewWorker(c, client.WorkerConfig{Queues: []string{queue}, Concurrency: concurrency,
		ClaimWait: 30 * time.Second, HeartbeatInterval: 200 * time.Millisecond, ShutdownTimeout: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
}

// run runs w until stop is called or the test ends.
func run(t *testing.T, w *client.Worker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waitJob polls the job through c until ok says yes, for at most two
// minutes (the job changes in another process, which sends the test no
// signal).
func waitJob(t *testing.T, c *client.Client, id uuid.UUID, what string, ok func(*api.Job) bool) *api.Job {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		j, err := c.Get(t.Context(), id)
		if err == nil && ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never %s: %+v, %v", id, what, j, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logDir returns a directory for the nodes' logs, kept when t fails.
func logDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "jobd-durable-logs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the nodes' logs are in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}
