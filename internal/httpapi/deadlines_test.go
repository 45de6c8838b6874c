package httpapi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// newHTTPServer serves h as jobd serve does, its reads cut at read and
// its answers at write (0: none), and returns its URL.
func newHTTPServer(t *testing.T, h http.Handler, read, write time.Duration) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = read, write
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// newTimedServer is newServer behind a server with a read and a write
// timeout.
func newTimedServer(t *testing.T, st store.Store, cfg httpapi.Config, read, write time.Duration) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Store = st
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	cfg.PollInterval = 5 * time.Millisecond
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{t: t, URL: newHTTPServer(t, h, read, write), store: st, logs: logs, auth: cfg.AdminSecret}
}

// The timeouts of these servers: far shorter than the waits the tests
// ask for, so that an answer that came whole outlived both. (A request
// that answers at once may outlive them too on a loaded machine: the
// tests make theirs on a server without timeouts over the same store.)
const (
	shortRead  = 100 * time.Millisecond
	shortWrite = 100 * time.Millisecond
)

// TestLongPollsOutliveTimeouts: a job's ?wait= and a worker's claim with
// a wait answer after the server's read and write timeouts have passed,
// whole: the write deadline does not cut them.
func TestLongPollsOutliveTimeouts(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		setup := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		s := newTimedServer(t, st, httpapi.Config{AdminSecret: adminSecret}, shortRead, shortWrite)
		q := setup.submit(t, `{"kind":"k","queue":"idle"}`, 201)
		// The job stays queued (no one works queue idle): the answer
		// comes when the wait ends, ten times the timeouts.
		var j api.Job
		s.do("GET", "/api/v1/jobs/"+q.ID.String()+"?wait=1s", "").must(t, 200, &j)
		if j.ID != q.ID || j.State != api.StateQueued {
			t.Fatalf("long-poll: %+v, want the queued job", j)
		}

		w := setup.registerWorker(t, "w")
		w.s = s
		var got api.ClaimResponse
		w.do("POST", "/api/v1/worker/claim", `{"queues":["empty"],"wait":"1s"}`).must(t, 200, &got)
		if len(got.Jobs) != 0 {
			t.Fatalf("claim: %+v, want none", got)
		}
	})
}

// TestStreamOutlivesWriteTimeout: a stream lives past the write timeout
// while its client reads, until its own maximum age.
func TestStreamOutlivesWriteTimeout(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		streams, err := httpapi.NewStreams(httpapi.StreamLimits{MaxAge: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s := newTimedServer(t, st, httpapi.Config{Streams: streams}, shortRead, shortWrite)
		id := newServer(t, st, httpapi.Config{}).submit(t, `{"kind":"k","queue":"idle"}`, 201).ID.String()
		sse := openRawStream(t, s, nil, id, "")
		if ev, _ := sse.next(); ev.name != "job" {
			t.Fatalf("first event %+v", ev)
		}
		if last := sse.end(); last.retry == "" {
			t.Fatalf("the stream ended with %+v, not at its maximum age", last)
		}
	})
}

// TestSlowBodyCut: a body that does not come within the read timeout is
// answered 400 (not an empty answer: net/http cancels the request's
// context with the read), and nothing is written.
func TestSlowBodyCut(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newTimedServer(t, st, httpapi.Config{}, shortRead, 0)
		c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = io.WriteString(c, "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p api.Problem
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != 400 || !strings.Contains(p.Detail, "read timeout") {
			t.Fatalf("a slow body: %d %+v (%v)", resp.StatusCode, p, err)
		}
		if n := countJobs(t, st); n != 0 {
			t.Fatalf("%d jobs after a cut body", n)
		}
	})
}
