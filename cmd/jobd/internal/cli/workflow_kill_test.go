package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
)

// killTestSecret is the admin secret of the nodes of TestWorkflowServeNodeKilled.
const killTestSecret = "workflow-kill-admin-secret"

// serveNode is a `jobd serve` subprocess (the test binary as jobd, see
// TestHelperJobdProcess), ended by the test by its id only.
type serveNode struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startServeNode starts `jobd serve` on database at addr and waits, at most
// two minutes, until it answers /health.
func startServeNode(t *testing.T, database, addr, logPath string) *serveNode {
	t.Helper()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperJobdProcess$")
	cmd.Env = append(os.Environ(), "JOBD_TEST_HELPER_ARGS="+strings.Join([]string{
		"serve", "--database", database, "--listen", addr, "--admin-secret", killTestSecret,
		"--reaper-interval", "200ms", "--workers", "[]", "--workflow-max-tasks", "6"}, "\x1f"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &serveNode{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(n.done) }()
	t.Cleanup(n.kill)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n
			}
		}
		select {
		case <-n.done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("jobd serve exited before it served:\n%s", b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("jobd serve does not answer /health")
		}
	}
}

// kill SIGKILLs the node and waits for its exit.
func (n *serveNode) kill() {
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

// rawCall sends an admin request and returns its status and body.
func rawCall(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+killTestSecret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// adminCall sends an admin request and decodes a 2xx answer.
func adminCall(t *testing.T, method, url, body string, out any) {
	t.Helper()
	status, b := rawCall(t, method, url, body)
	if status/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, url, status, b)
	}
	if out != nil {
		if err := json.NewDecoder(strings.NewReader(b)).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWorkflowServeNodeKilled (and --workflow-max-tasks, the nodes'
// limit, 6: a seventh task is a 422 naming tasks[6]): a workflow (A → B1…B4 → C) run by a
// remote worker through a `jobd serve` node that is SIGKILLed while the
// B tasks run, and started again on the same database and address. The
// worker's outcomes reach the new node (or, their leases lost, the tasks
// run again), and the workflow ends succeeded: A ran once, C once, after
// every B, with the four B results as its inputs. On both stores.
func TestWorkflowServeNodeKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts jobd serve subprocesses")
	}
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			database := "sqlite:" + filepath.Join(dir, "jobd.db")
			if driver == "postgres" {
				database = migrated.NewDatabase(t)
			}
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			base := "http://" + addr
			node := startServeNode(t, database, addr, filepath.Join(dir, "node1.log"))

			var created api.WorkerCreated
			adminCall(t, "POST", base+"/api/v1/workers", `{"name":"w"}`, &created)
			tasks := []string{`{"ref":"A","kind":"step","queue":"wfq","lease_ttl":"2s"}`}
			for i := 1; i <= 4; i++ {
				tasks = append(tasks, fmt.Sprintf(`{"ref":"B%d","kind":"step","queue":"wfq","lease_ttl":"2s","depends_on":["A"]}`, i))
			}
			tasks = append(tasks, `{"ref":"C","kind":"step","queue":"wfq","lease_ttl":"2s","depends_on":["B1","B2","B3","B4"]}`)
			var wf api.Workflow
			adminCall(t, "POST", base+"/api/v1/workflows", `{"name":"killed","tasks":[`+strings.Join(tasks, ",")+`]}`, &wf)
			// --workflow-max-tasks 6: a seventh task is refused, naming it.
			over := `{"name":"over","tasks":[` + strings.Join(append(tasks, `{"ref":"Z","kind":"step","queue":"wfq"}`), ",") + `]}`
			if status, body := rawCall(t, "POST", base+"/api/v1/workflows", over); status != http.StatusUnprocessableEntity || !strings.Contains(body, `"field":"tasks[6]"`) {
				t.Fatalf("a workflow of 7 tasks with --workflow-max-tasks 6: %d %s", status, body)
			}

			c, err := client.New(base, created.APIKey)
			if err != nil {
				t.Fatal(err)
			}
			w := client.NewWorker(c, client.WorkerConfig{Queues: []string{"wfq"}, Concurrency: 4, ClaimWait: time.Second})
			bRunning, release := make(chan struct{}, 4), make(chan struct{})
			type runOf struct {
				Ref    string
				Inputs []string
			}
			client.Handle(w, "step", func(ctx context.Context, task *client.Task[map[string]any]) (runOf, error) {
				in := make([]string, 0, len(task.Job.Inputs))
				for ref, v := range task.Job.Inputs {
					if v.State == api.StateSucceeded {
						in = append(in, ref)
					}
				}
				slices.Sort(in)
				if strings.HasPrefix(task.Job.Ref, "B") {
					bRunning <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
						return runOf{}, ctx.Err()
					}
				}
				return runOf{Ref: task.Job.Ref, Inputs: in}, nil
			})
			ctx, stop := context.WithCancel(t.Context())
			runDone := make(chan error, 1)
			go func() { runDone <- w.Run(ctx) }()
			defer func() { stop(); <-runDone }()

			for range 4 {
				select {
				case <-bRunning:
				case <-time.After(time.Minute):
					t.Fatal("the B tasks did not all start")
				}
			}
			node.kill()
			startServeNode(t, database, addr, filepath.Join(dir, "node2.log"))
			close(release)

			deadline := time.Now().Add(2 * time.Minute)
			for wf.State != api.WorkflowSucceeded {
				if time.Now().After(deadline) {
					t.Fatalf("workflow %s after two minutes: %+v", wf.State, wf.Tasks)
				}
				time.Sleep(50 * time.Millisecond) // polls the new node's state, bounded by the deadline
				adminCall(t, "GET", base+"/api/v1/workflows/"+wf.ID.String(), "", &wf)
			}
			byRef := map[string]api.WorkflowTask{}
			for _, task := range wf.Tasks {
				byRef[task.Ref] = task
			}
			if byRef["A"].Attempt != 1 || byRef["C"].Attempt != 1 {
				t.Fatalf("A ran %d times, C %d: want once each", byRef["A"].Attempt, byRef["C"].Attempt)
			}
			var cj api.Job
			adminCall(t, "GET", base+"/api/v1/jobs/"+byRef["C"].ID.String(), "", &cj)
			var res runOf
			if err := json.Unmarshal(cj.Result, &res); err != nil || !slices.Equal(res.Inputs, []string{"B1", "B2", "B3", "B4"}) {
				t.Fatalf("C's result %s: want the four B results as its inputs", cj.Result)
			}
			if cStart := byRef["C"].StartedAt; cStart == nil {
				t.Fatal("C has no start")
			} else {
				for i := 1; i <= 4; i++ {
					if b := byRef[fmt.Sprintf("B%d", i)]; b.FinishedAt == nil || b.FinishedAt.After(*cStart) {
						t.Fatalf("B%d finished %v, after C started %v", i, b.FinishedAt, cStart)
					}
				}
			}
		})
	}
}
