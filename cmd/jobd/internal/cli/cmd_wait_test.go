package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// apiServer is a jobd API over a real store, for the client commands.
type apiServer struct {
	url   string
	store store.Store
	env   map[string]string
}

// eachServer runs fn as a parallel subtest per store driver, with a
// server whose admin secret is in the commands' environment (JOBD_KEY).
func eachServer(t *testing.T, fn func(t *testing.T, s *apiServer)) {
	t.Parallel()
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			st := teststore.Open(t, d)
			h, err := httpapi.New(httpapi.Config{Store: st, AdminSecret: "admin-secret", PollInterval: 5e6})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			fn(t, &apiServer{url: srv.URL, store: st, env: map[string]string{"JOBD_SERVER": srv.URL, "JOBD_KEY": "admin-secret"}})
		})
	}
}

// run runs the jobd command line in-process and returns its exit code,
// standard output and standard error.
func (s *apiServer) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := s.runTo(t, &stdout, &stderr, args...)
	return code, stdout.String(), stderr.String()
}

func (s *apiServer) runTo(t *testing.T, stdout, stderr io.Writer, args ...string) int {
	t.Helper()
	env := &Env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr, Getenv: func(k string) string { return s.env[k] }}
	return Main(t.Context(), args, env)
}

// submit inserts a job through the store and returns its id.
func (s *apiServer) submit(t *testing.T, kind string) string {
	t.Helper()
	res, err := s.store.JobInsertMany(context.Background(), []job.InsertParams{{Kind: kind, Queue: kind}})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Job.ID.String()
}

// claim claims the job of queue through the store, as a worker would.
func (s *apiServer) claim(t *testing.T, queue string) *job.Job {
	t.Helper()
	js, err := s.store.JobClaim(context.Background(), store.ClaimParams{Queue: queue, Max: 1, Owner: "test"})
	if err != nil || len(js) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(js), err)
	}
	return js[0]
}

func (s *apiServer) finish(t *testing.T, j *job.Job, status store.OutcomeStatus) {
	t.Helper()
	o := store.Outcome{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Outcome: job.Outcome{Status: status, Error: "it broke", Result: json.RawMessage(`{"n":1}`)}}
	if res, err := s.store.JobFinish(context.Background(), []store.Outcome{o}); err != nil || res[0].Lost {
		t.Fatalf("finish: %+v, %v", res, err)
	}
}

func TestWaitExitCodes(t *testing.T) {
	eachServer(t, func(t *testing.T, s *apiServer) {
		succeeded, failed, canceled, queued := s.submit(t, "ok"), s.submit(t, "bad"), s.submit(t, "stop"), s.submit(t, "later")
		s.finish(t, s.claim(t, "ok"), store.OutcomeSucceeded)
		s.finish(t, s.claim(t, "bad"), store.OutcomeFailed)
		if _, err := s.store.JobCancel(context.Background(), mustParse(t, canceled)); err != nil {
			t.Fatal(err)
		}

		for _, c := range []struct {
			args []string
			code int
			out  string
		}{
			{[]string{"wait", succeeded}, 0, succeeded + " succeeded in "},
			{[]string{"wait", failed}, 1, failed + " failed"},
			{[]string{"wait", canceled}, 1, canceled + " canceled"},
			{[]string{"wait", "--timeout", "1ms", queued}, 3, ""},
			{[]string{"wait", "0190b7a4-0000-7000-8000-000000000000"}, 1, ""},
			{[]string{"wait"}, 2, ""},
			{[]string{"wait", "not-an-id"}, 2, ""},
			{[]string{"wait", succeeded, "extra"}, 2, ""},
			{[]string{"wait", "--timeout", "-1s", succeeded}, 2, ""},
			{[]string{"wait", "--bogus", succeeded}, 2, ""},
		} {
			code, out, errOut := s.run(t, c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Errorf("jobd %s: exit %d, want %d; stdout %q, stderr %q", strings.Join(c.args, " "), code, c.code, out, errOut)
			}
		}

		// --json prints the final job; the exit code still tells.
		code, out, _ := s.run(t, "wait", "--json", failed)
		var j api.Job
		if err := json.Unmarshal([]byte(out), &j); err != nil || code != 1 || j.State != api.StateFailed || j.Error != "it broke" {
			t.Errorf("wait --json: exit %d, %q", code, out)
		}
	})
}

// TestWaitFollows runs jobd wait while the job moves: one plain line per
// change (stdout is not a terminal), exit 0 when it succeeds.
func TestWaitFollows(t *testing.T) {
	eachServer(t, func(t *testing.T, s *apiServer) {
		id := s.submit(t, "live")
		out := &lineWriter{lines: make(chan string, 16)}
		exit := make(chan int, 1)
		go func() { exit <- s.runTo(t, out, &bytes.Buffer{}, "wait", id) }()

		next := func(want string) {
			t.Helper()
			if line := <-out.lines; !strings.Contains(line, want) {
				t.Fatalf("line %q, want it to contain %q", line, want)
			}
		}
		next("queued")
		run := s.claim(t, "live")
		next("running")
		if _, err := s.store.JobSetProgress(context.Background(), store.Lease{ID: run.ID, Token: run.LeaseToken}, job.Progress{Phase: "decoding", Done: 1, Total: 4}); err != nil {
			t.Fatal(err)
		}
		next("running decoding 1/4 (25%)")
		s.finish(t, run, store.OutcomeSucceeded)
		next("succeeded")
		next(id + " succeeded in ")
		if code := <-exit; code != 0 {
			t.Errorf("exit %d", code)
		}
	})
}

// lineWriter sends each complete line written to it.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// TestBarView draws the terminal progress line: state, phase, bar,
// done/total and elapsed time, redrawn in place with \r.
func TestBarView(t *testing.T) {
	var buf bytes.Buffer
	v := newBarView(&buf)
	v.update(api.Job{State: api.StateRunning, Progress: api.Progress{Phase: "decoding", Done: 1, Total: 4}})
	v.update(api.Job{State: api.StateSucceeded, Progress: api.Progress{Phase: "decoding", Done: 4, Total: 4}})
	v.close()
	out := buf.String()
	for _, want := range []string{
		"\r\x1b[Krunning decoding [######------------------] 1/4  0:0",
		"\r\x1b[Ksucceeded decoding [########################] 4/4  0:0",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bar output %q lacks %q", out, want)
		}
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("bar output %q does not end its line", out)
	}
	if got := formatElapsed(3723e9); got != "1:02:03" {
		t.Errorf("formatElapsed: %q", got)
	}
}
