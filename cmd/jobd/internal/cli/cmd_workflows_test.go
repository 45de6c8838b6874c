package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// diamondYAML is a diamond (A → B, C → D) on queue wfc, in YAML.
const diamondYAML = `name: diamond
idempotency_key: d-1
tasks:
  - ref: A
    queue: wfc
    kind: step
    args: {n: 1}
  - {ref: B, queue: wfc, kind: step, depends_on: [A], timeout: 30s}
  - {ref: C, queue: wfc, kind: step, depends_on: [A], timeout: 30}
  - ref: D
    queue: wfc
    kind: step
    depends_on: [B, C]
    run_on: any
`

// runCLI runs jobd with args in-process against s and returns its exit
// code, stdout and stderr.
func runCLI(ctx context.Context, s *workerServer, args ...string) (int, string, string) {
	var stdout, stderr strings.Builder
	env := &Env{Stdin: strings.NewReader(""), Stdout: &lockedWriter{w: &stdout}, Stderr: &lockedWriter{w: &stderr},
		Getenv: func(string) string { return "" }}
	args = append(args[:2:2], append([]string{"--server", s.url, "--key", "admin-secret"}, args[2:]...)...)
	code := Main(ctx, args, env)
	return code, stdout.String(), stderr.String()
}

// TestWorkflowsCommand: jobd workflows submit reads YAML and JSON
// (created, then existing for the same idempotency key; a cycle is
// refused naming the task's member, exit 1); get --wait follows a
// workflow a worker runs, printing each task's change of state, and
// exits 0 once it succeeded; list shows it; cancel and retry act on
// another, and a cancel of a final workflow says there is nothing to
// cancel. On both stores.
func TestWorkflowsCommand(t *testing.T) {
	dir := t.TempDir()
	yamlFile, cycleFile := filepath.Join(dir, "diamond.yaml"), filepath.Join(dir, "cycle.json")
	if err := os.WriteFile(yamlFile, []byte(diamondYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	cycle := `{"name":"cycle","tasks":[{"ref":"a","kind":"k","depends_on":["b"]},{"ref":"b","kind":"k","depends_on":["a"]}]}`
	if err := os.WriteFile(cycleFile, []byte(cycle), 0o644); err != nil {
		t.Fatal(err)
	}
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		ctx := t.Context()
		code, out, errOut := runCLI(ctx, s, "workflows", "submit", yamlFile)
		if code != 0 || !strings.Contains(out, " created: running, 4 tasks") {
			t.Fatalf("submit: exit %d, %q %q", code, out, errOut)
		}
		id := strings.Fields(out)[1]
		if code, out, _ := runCLI(ctx, s, "workflows", "submit", yamlFile); code != 0 || !strings.Contains(out, id+" existing") {
			t.Fatalf("submit again: exit %d, %q", code, out)
		}
		if code, _, errOut := runCLI(ctx, s, "workflows", "submit", cycleFile); code != 1 || !strings.Contains(errOut, "depends_on") {
			t.Fatalf("a cycle: exit %d, %q", code, errOut)
		}

		// get --wait, started before any task runs: its first line shows
		// A queued and three waiting.
		follow := &lockedWriter{w: &strings.Builder{}}
		followed := make(chan int, 1)
		go func() {
			env := &Env{Stdin: strings.NewReader(""), Stdout: follow, Stderr: follow,
				Getenv: func(string) string { return "" }}
			followed <- Main(ctx, []string{"workflows", "get", "--server", s.url, "--key", "admin-secret", "--wait", id}, env)
		}()
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(follow.String(), "1 queued") {
			if time.Now().After(deadline) {
				t.Fatalf("get --wait shows %q", follow.String())
			}
			time.Sleep(10 * time.Millisecond) // polls its output, bounded by the deadline
		}
		_, wc := s.register(t, "w")
		w := client.NewWorker(wc, client.WorkerConfig{Queues: []string{"wfc"}, Concurrency: 2, ClaimWait: time.Second})
		client.Handle(w, "step", func(ctx context.Context, task *client.Task[map[string]any]) (string, error) {
			return task.Job.Ref, nil
		})
		runCtx, stop := context.WithCancel(ctx)
		runDone := make(chan error, 1)
		go func() { runDone <- w.Run(runCtx) }()
		defer func() { stop(); <-runDone }()
		select {
		case code := <-followed:
			got := follow.String()
			if code != 0 || !strings.Contains(got, "D waiting → ") || !strings.Contains(got, "succeeded, 4 tasks (4 succeeded") ||
				!strings.Contains(got, "B,C (any)") {
				t.Fatalf("get --wait: exit %d:\n%s", code, got)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("get --wait still follows:\n%s", follow.String())
		}

		if code, out, _ := runCLI(ctx, s, "workflows", "list", "--name", "diamond"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "succeeded") {
			t.Fatalf("list: exit %d, %q", code, out)
		}
		other, _, err := s.admin.SubmitWorkflowRequest(ctx, api.WorkflowRequest{Name: "idle", Tasks: []api.WorkflowTaskRequest{
			{Ref: "x", SubmitRequest: api.SubmitRequest{Queue: "nobody", Kind: "k"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if code, out, _ := runCLI(ctx, s, "workflows", "cancel", other.ID.String()); code != 0 || !strings.Contains(out, "canceled: canceled") {
			t.Fatalf("cancel: exit %d, %q", code, out)
		}
		if code, _, errOut := runCLI(ctx, s, "workflows", "cancel", other.ID.String()); code != 1 || !strings.Contains(errOut, "nothing to cancel") {
			t.Fatalf("cancel again: exit %d, %q", code, errOut)
		}
		if code, out, _ := runCLI(ctx, s, "workflows", "retry", other.ID.String()); code != 0 || !strings.Contains(out, "retried: running") {
			t.Fatalf("retry: exit %d, %q", code, out)
		}
		if code, out, _ := runCLI(ctx, s, "workflows", "get", other.ID.String()); code != 0 || !strings.Contains(out, "x    queued") {
			t.Fatalf("get: exit %d, %q", code, out)
		}
	})
}

// String is what was written so far.
func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}
