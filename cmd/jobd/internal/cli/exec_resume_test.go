package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestWorkerExecReadsResume: a job that recorded a step, waited for a
// signal and got it is run by jobd worker --exec, whose command reads
// JOBD_STEPS_FILE and JOBD_SIGNAL_FILE (JOBD_CHILDREN_FILE empty: no
// children).
func TestWorkerExecReadsResume(t *testing.T) {
	eachWorkerServer(t, func(t *testing.T, s *workerServer) {
		_, _, key := s.registerKey(t, "exec")
		j := s.submit(t, api.SubmitRequest{Queue: "resume", Kind: "k"})
		ctx := context.Background()
		claimed, err := s.store.JobClaim(ctx, store.ClaimParams{Queue: "resume", Max: 1, Owner: "test"})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v", err)
		}
		lease := store.LeaseOf(claimed[0])
		if _, err := s.store.JobStep(ctx, lease, store.StepParams{Name: "upload", Result: json.RawMessage(`{"url":"u"}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.store.JobWait(ctx, lease, job.WaitRequest{For: job.WaitSignal, Signal: "go"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.store.JobSignal(ctx, j.ID, "go", json.RawMessage(`7`)); err != nil {
			t.Fatal(err)
		}
		command := `printf '{"steps":%s,"signal":%s,"children":"%s"}' "$(cat "$JOBD_STEPS_FILE")" "$(cat "$JOBD_SIGNAL_FILE")" "$(cat "$JOBD_CHILDREN_FILE")"`
		wctx, stop := context.WithCancel(t.Context())
		var stderr strings.Builder
		done := make(chan int, 1)
		go func() {
			env := &Env{Stdin: strings.NewReader(""), Stdout: &strings.Builder{}, Stderr: &lockedWriter{w: &stderr},
				Getenv: func(string) string { return "" }}
			done <- Main(wctx, []string{"worker", "--server", s.url, "--key", key, "--queue", "resume",
				"--exec", command, "--claim-wait", "2s"}, env)
		}()
		final := s.waitFor(t, j.ID, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		stop()
		if code := <-done; code != 0 {
			t.Fatalf("jobd worker exit %d: %s", code, stderr.String())
		}
		var res struct {
			Steps    map[string]map[string]string
			Signal   api.Signal
			Children string
		}
		if err := json.Unmarshal(final.Result, &res); err != nil {
			t.Fatalf("result %s: %v", final.Result, err)
		}
		if res.Steps["upload"]["url"] != "u" || res.Signal.Name != "go" || string(res.Signal.Payload) != "7" || res.Children != "" {
			t.Fatalf("result %s", final.Result)
		}
	})
}
