package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// drivers are the stores every test runs against.
var drivers = []string{"sqlite", "postgres"}

// database is a fresh database of a driver, which may be opened, closed
// and opened again (a restart).
type database struct{ driver, dsn string }

func newDatabase(t *testing.T, driver string) database {
	t.Helper()
	if driver == "sqlite" {
		return database{driver, filepath.Join(t.TempDir(), "jobd.db")}
	}
	return database{driver, migrated.NewDatabase(t)}
}

func (d database) open(t *testing.T) store.Store {
	t.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		err error
	)
	switch d.driver {
	case "sqlite":
		st, err = sqlite.Open(ctx, d.dsn, sqlite.Options{})
	case "postgres":
		st, err = postgres.Open(ctx, d.dsn, postgres.Options{Logger: quiet})
	}
	if err != nil {
		t.Fatalf("open %s: %v", d.driver, err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", d.driver, err)
	}
	return storewatch.Wrap(st)
}

// eachStore runs fn as a parallel subtest per driver, on a fresh database.
func eachStore(t *testing.T, fn func(t *testing.T, db database)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, newDatabase(t, d))
		})
	}
}

var quiet = slog.New(slog.DiscardHandler)

// upstream is the service behind the gateway, started by the test:
//
//	/echo    answers the request it got as JSON (status from ?status=)
//	/slow    blocks until release is closed, or the call is aborted
//	/fail    answers 500 (counted in fails)
//	/flaky   answers 503 on its first call, then 200
//	/large   answers ?bytes= bytes
type upstream struct {
	*httptest.Server
	started chan string   // /slow got a call: its ?n=
	aborted chan string   // a /slow call was aborted by its caller
	release chan struct{} // closing it answers every /slow call
	echoed  chan echo     // /echo got a call
	fails   atomic.Int64
	flaky   atomic.Int64
}

// echo is what /echo received.
type echo struct {
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query"`
	Header http.Header `json:"header"`
	Body   string      `json:"body"`
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{
		started: make(chan string, 100),
		aborted: make(chan string, 100),
		release: make(chan struct{}),
		echoed:  make(chan echo, 100),
	}
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e := echo{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header, Body: string(body)}
		u.echoed <- e
		status := http.StatusOK
		if s := r.URL.Query().Get("status"); s != "" {
			status, _ = strconv.Atoi(s)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(e)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Query().Get("n")
		u.started <- n
		select {
		case <-u.release:
			fmt.Fprintf(w, "slow %s done", n)
		case <-r.Context().Done():
			u.aborted <- n
		}
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		u.fails.Add(1)
		http.Error(w, "upstream broken", http.StatusInternalServerError)
	})
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		if u.flaky.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "fine now")
	})
	mux.HandleFunc("/large", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("bytes"))
		_, _ = w.Write([]byte(strings.Repeat("x", n)))
	})
	u.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		once.Do(func() { u.unblock() })
		u.Close()
	})
	return u
}

// unblock answers the /slow calls, present and future.
func (u *upstream) unblock() {
	select {
	case <-u.release:
	default:
		close(u.release)
	}
}

// waitStarted waits for a /slow call (its ?n=).
func (u *upstream) waitStarted(t *testing.T) string {
	t.Helper()
	return recv(t, u.started, "a /slow call to start")
}

func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// options of a jobd under test; zero values take the test defaults.
type options struct {
	secret      string
	maxPending  int
	maxResponse int64
	concurrency int
	maxAttempts int
	clock       clock.Clock // the node's (its engine's, so its gateway's)
	ttl         time.Duration
	timeout     time.Duration
	upstreamURL string // default the test upstream's
	heartbeat   time.Duration
	sweep       time.Duration      // the result TTL's interval
	noWorkers   bool               // no worker pool for the gateway queue
	more        []gateway.Upstream // upstreams besides "up"
}

// node is a jobd under test: store, engine, gateway and HTTP server, as
// jobd serve composes them (jobd.NewServer).
type node struct {
	t    *testing.T
	URL  string
	st   store.Store
	auth string
	stop func()
}

// start runs a jobd on db in front of up, stopped when the test ends (or
// by stop, to restart).
func start(t *testing.T, db database, up *upstream, o options) *node {
	t.Helper()
	st := db.open(t)
	if o.concurrency == 0 {
		o.concurrency = 4
	}
	if o.maxAttempts == 0 {
		o.maxAttempts = 3
	}
	queues := []engine.QueueConfig{{
		Queue: gateway.Queue, Concurrency: o.concurrency,
		Backoff: engine.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond},
	}}
	gwConcurrency := 0
	if o.noWorkers {
		queues, gwConcurrency = nil, -1
	}
	raw := o.upstreamURL
	if raw == "" {
		raw = up.URL
	}
	target, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := jobd.NewServer(ctx, jobd.Config{
		Store: st, Logger: quiet, AdminSecret: o.secret,
		Engine: engine.Config{
			PollInterval: 20 * time.Millisecond, ShutdownTimeout: 50 * time.Millisecond,
			HeartbeatInterval: o.heartbeat, Clock: o.clock, Queues: queues,
		},
		Gateway: jobd.GatewayConfig{
			Upstreams:  append([]gateway.Upstream{{Name: "up", URL: target, Timeout: o.timeout}}, o.more...),
			MaxPending: o.maxPending, MaxResponseBytes: o.maxResponse, Concurrency: gwConcurrency,
			MaxAttempts: o.maxAttempts, ResultTTL: o.ttl, SweepInterval: o.sweep,
		},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Run(ctx); err != nil {
			t.Errorf("server: %v", err)
		}
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			hs.Close()
			if err := srv.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			st.Close()
		})
	}
	t.Cleanup(stop)
	return &node{t: t, URL: hs.URL, st: st, auth: o.secret, stop: stop}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) String() string {
	return fmt.Sprintf("%d %s", r.status, r.body)
}

// do sends a request; hdr are "Name: value" pairs. The node's secret is
// sent unless hdr carries an Authorization.
func (n *node) do(method, path, body string, hdr ...string) *response {
	n.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, n.URL+path, rd)
	if err != nil {
		n.t.Fatal(err)
	}
	if n.auth != "" {
		req.Header.Set("Authorization", "Bearer "+n.auth)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		n.t.Fatal(err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}
}

// want requires r's status.
func want(t *testing.T, what string, r *response, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: got %s, want %d", what, r, status)
	}
}

// submit sends an async request that must be accepted; it returns the
// job's id (zero for fire-and-forget).
func (n *node) submit(method, path, body, mode string, hdr ...string) uuid.UUID {
	n.t.Helper()
	r := n.do(method, path, body, append(hdr, "X-Async: "+mode)...)
	want(n.t, method+" "+path+" async", r, http.StatusAccepted)
	if len(r.body) != 0 {
		n.t.Fatalf("202 with a body: %q", r.body)
	}
	raw := r.header.Get("X-Async-Id")
	if mode != "store" {
		if raw != "" {
			n.t.Fatalf("X-Async: %s answered with an id", mode)
		}
		return uuid.Nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		n.t.Fatalf("X-Async-Id %q: %v", raw, err)
	}
	if got := r.header.Get("X-Arango-Async-Id"); got != raw {
		n.t.Fatalf("x-arango-async-id %q, want %q", got, raw)
	}
	return id
}

// waitState waits until the job reaches state, checking it after each
// write to the node's (watched) store.
func (n *node) waitState(id uuid.UUID, state job.State) *job.Job {
	n.t.Helper()
	var j *job.Job
	storewatch.Until(n.t, n.st, fmt.Sprintf("job %s to reach %s", id, state), func() bool {
		var err error
		if j, err = n.st.JobGet(context.Background(), id); err != nil {
			n.t.Fatalf("JobGet %s: %v", id, err)
		}
		return j.State == state
	})
	return j
}

// waitGone waits until the job is removed from the store, checking after
// each write to the node's (watched) store.
func (n *node) waitGone(id uuid.UUID) {
	n.t.Helper()
	storewatch.Until(n.t, n.st, fmt.Sprintf("job %s to be removed", id), func() bool {
		_, err := n.st.JobGet(context.Background(), id)
		if err != nil && !errors.Is(err, job.ErrNotFound) {
			n.t.Fatalf("JobGet %s: %v", id, err)
		}
		return errors.Is(err, job.ErrNotFound)
	})
}

// jobCount is the number of gateway jobs in the store.
func (n *node) jobCount() int64 {
	n.t.Helper()
	res, err := n.st.JobList(context.Background(), store.ListParams{Queue: gateway.Queue})
	if err != nil {
		n.t.Fatal(err)
	}
	return res.Total
}

// problemType reads the type of a problem answer.
func problemType(t *testing.T, r *response) string {
	t.Helper()
	var p struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil || !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("not a problem answer: %s (%s)", r, r.header.Get("Content-Type"))
	}
	return p.Type
}
