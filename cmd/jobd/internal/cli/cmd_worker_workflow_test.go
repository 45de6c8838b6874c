package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestWorkerExecInputs: jobd worker --exec runs a diamond's tasks (A → B,
// C → D), each command reading its inputs from JOBD_INPUTS_FILE: empty
// for A, A's result for B and C, B's and C's results for D, each with
// its state.
func TestWorkerExecInputs(t *testing.T) {
	script := filepath.Join(t.TempDir(), "task.sh")
	body := `#!/bin/sh
args=$(cat)
inputs=$(cat "$JOBD_INPUTS_FILE")
[ -z "$inputs" ] && inputs=null
printf '{"args":%s,"inputs":%s}' "$args" "$inputs"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		_, _, key := s.registerKey(t, "exec")
		task := func(ref string, deps ...string) job.TaskParams {
			return job.TaskParams{Ref: ref, DependsOn: deps,
				InsertParams: job.InsertParams{Queue: "wf", Kind: "step", Args: json.RawMessage(`{"name":"` + ref + `"}`)}}
		}
		res, err := s.store.WorkflowSubmit(context.Background(), store.WorkflowSubmitParams{WorkflowParams: job.WorkflowParams{
			Name: "diamond", Tasks: []job.TaskParams{task("A"), task("B", "A"), task("C", "A"), task("D", "B", "C")}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		var stderr strings.Builder
		done := make(chan int, 1)
		go func() {
			env := &Env{Stdin: strings.NewReader(""), Stdout: &strings.Builder{}, Stderr: &lockedWriter{w: &stderr},
				Getenv: func(string) string { return "" }}
			done <- Main(ctx, []string{"worker", "--server", s.url, "--key", key, "--queue", "wf",
				"--exec", script, "--claim-wait", "1s", "--concurrency", "2"}, env)
		}()
		d := s.waitFor(t, res.Tasks[3].ID, "D succeeded", func(j *job.Job) bool { return j.State.Final() })
		a := s.waitFor(t, res.Tasks[0].ID, "A", func(*job.Job) bool { return true })
		stop()
		if code := <-done; code != 0 {
			t.Fatalf("jobd worker exit %d: %s", code, stderr.String())
		}
		type result struct {
			Args   map[string]string
			Inputs map[string]struct {
				State  string
				Result json.RawMessage
				Error  string
			}
		}
		var ra, rd result
		if err := json.Unmarshal(a.Result, &ra); err != nil || ra.Inputs != nil || ra.Args["name"] != "A" {
			t.Fatalf("A's result %s (%v): want no inputs", a.Result, err)
		}
		if err := json.Unmarshal(d.Result, &rd); err != nil || d.State != job.StateSucceeded || len(rd.Inputs) != 2 {
			t.Fatalf("D %s, result %s (%v): want B's and C's inputs", d.State, d.Result, err)
		}
		for _, ref := range []string{"B", "C"} {
			var dep result
			in := rd.Inputs[ref]
			if err := json.Unmarshal(in.Result, &dep); err != nil || in.State != "succeeded" || dep.Args["name"] != ref || dep.Inputs["A"].State != "succeeded" {
				t.Fatalf("D's input %s: %+v", ref, in)
			}
		}
	})
}
