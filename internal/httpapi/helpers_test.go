package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// drivers are the stores every test runs against.
var drivers = teststore.Drivers

// openStore opens a migrated store of driver on a fresh database.
func openStore(t testing.TB, driver string) store.Store { return teststore.Open(t, driver) }

// eachStore runs fn as a parallel subtest per driver.
func eachStore(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Helper()
	teststore.Each(t, fn)
}

// testServer is the API over a real store behind a real HTTP server.
type testServer struct {
	t     *testing.T
	URL   string
	store store.Store
	logs  *syncBuffer
	// auth is the credential sent by do unless a call gives its own.
	auth string
}

func newServer(t *testing.T, st store.Store, cfg httpapi.Config) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Store = st
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatalf("httpapi.New: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{t: t, URL: srv.URL, store: st, logs: logs, auth: cfg.AdminSecret}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with an optional body; hdr are "Name: value" pairs.
func (s *testServer) do(method, path, body string, hdr ...string) *response {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.auth != "" {
		req.Header.Set("Authorization", "Bearer "+s.auth)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}
}

// must checks the status and decodes the body into v (if not nil).
func (r *response) must(t *testing.T, status int, v any) *response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("decode %s: %v", r.body, err)
		}
	}
	return r
}

// problem checks that r is a problem document of status naming field.
func (r *response) problem(t *testing.T, status int, field string) api.Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != api.ProblemContentType {
		t.Fatalf("Content-Type %q, want %q; status %d body %s", ct, api.ProblemContentType, r.status, r.body)
	}
	var p api.Problem
	r.must(t, status, &p)
	if p.Status != status || p.Type == "" || p.Title == "" {
		t.Fatalf("problem %+v: want status %d with type and title", p, status)
	}
	if p.Field != field {
		t.Fatalf("problem field %q, want %q (%+v)", p.Field, field, p)
	}
	return p
}

// submit posts a job body and returns the answer's job, checking status.
func (s *testServer) submit(t *testing.T, body string, status int) api.Job {
	t.Helper()
	var j api.Job
	s.do("POST", "/api/v1/jobs", body).must(t, status, &j)
	return j
}

// countJobs is the number of jobs in the store.
func countJobs(t *testing.T, st store.Store) int64 {
	t.Helper()
	res, err := st.JobList(context.Background(), store.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Total
}

// claim claims the job of queue (one) through the store, as a worker.
func claim(t *testing.T, st store.Store, queue string) *job.Job {
	t.Helper()
	js, err := st.JobClaim(context.Background(), store.ClaimParams{Queue: queue, Max: 1, Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 1 {
		t.Fatalf("claimed %d jobs of %q, want 1", len(js), queue)
	}
	return js[0]
}

// finish reports an outcome for a claimed job.
func finish(t *testing.T, st store.Store, j *job.Job, status store.OutcomeStatus, result, errText string) {
	t.Helper()
	o := store.Outcome{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Outcome: job.Outcome{Status: status, Error: errText}}
	if result != "" {
		o.Result = json.RawMessage(result)
	}
	res, err := st.JobFinish(context.Background(), []store.Outcome{o})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Lost {
		t.Fatalf("finish %s: lease lost", j.ID)
	}
}

func setProgress(t *testing.T, st store.Store, j *job.Job, p job.Progress) {
	t.Helper()
	if _, err := st.JobSetProgress(context.Background(), store.Lease{ID: j.ID, Token: j.LeaseToken}, p); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
