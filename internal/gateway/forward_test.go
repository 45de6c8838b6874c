package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestSyncForward: without an async header the request goes upstream at
// once, path, query, method, headers and body intact (hop-by-hop headers
// dropped), and the upstream's answer comes back as is.
func TestSyncForward(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	n := start(t, newDatabase(t, "sqlite"), up, options{})

	r := n.do("POST", "/gw/up/echo?status=418&x=%2F1", "hello", "X-Custom: 1", "Connection: X-Hop", "X-Hop: secret")
	want(t, "sync POST", r, http.StatusTeapot)
	if r.header.Get("X-Upstream") != "yes" {
		t.Fatalf("the upstream's headers did not come back: %v", r.header)
	}
	e := recv(t, up.echoed, "the echo")
	if e.Method != "POST" || e.Path != "/echo" || e.Query != "status=418&x=%2F1" || e.Body != "hello" {
		t.Fatalf("upstream got %+v", e)
	}
	if e.Header.Get("X-Custom") != "1" || e.Header.Get("X-Hop") != "" || e.Header.Get("X-Forwarded-For") == "" {
		t.Fatalf("upstream headers %v: want X-Custom, X-Forwarded-For and no hop-by-hop header", e.Header)
	}
	// "X-Async: false" is the synchronous path too.
	want(t, "X-Async: false", n.do("GET", "/gw/up/echo", "", "X-Async: false"), http.StatusOK)
	recv(t, up.echoed, "the echo")

	r = n.do("GET", "/gw/nope/echo", "")
	want(t, "unknown upstream", r, http.StatusNotFound)
	problemType(t, r)
	want(t, "bad X-Async", n.do("GET", "/gw/up/echo", "", "X-Async: later"), http.StatusBadRequest)
	want(t, "disagreeing headers", n.do("GET", "/gw/up/echo", "", "X-Async: true", "x-arango-async: store"), http.StatusBadRequest)
	if got := n.jobCount(); got != 0 {
		t.Fatalf("%d jobs queued by synchronous or refused requests", got)
	}
}

// TestSyncFailures: a dead upstream is a 502, a slow one past its
// timeout a 504; both are jobd's problem answers.
func TestSyncFailures(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	dead := newUpstream(t)
	dead.Close()
	n := start(t, newDatabase(t, "sqlite"), up, options{upstreamURL: dead.URL})
	r := n.do("GET", "/gw/up/echo", "")
	want(t, "dead upstream", r, http.StatusBadGateway)
	if got := problemType(t, r); got != gateway.ProblemUpstreamFailed {
		t.Fatalf("problem type %q", got)
	}

	// The timeout is long enough for the call to reach the upstream even
	// on a loaded machine, so that its abort can be seen there.
	slow := start(t, newDatabase(t, "sqlite"), up, options{timeout: time.Second})
	r = slow.do("GET", "/gw/up/slow", "")
	want(t, "slow upstream", r, http.StatusGatewayTimeout)
	if got := problemType(t, r); got != gateway.ProblemUpstreamTimeout {
		t.Fatalf("problem type %q", got)
	}
	up.waitStarted(t)
	recv(t, up.aborted, "the timed-out call to be aborted")
}

// TestStoreAndFetch walks one stored request through the whole contract
// on both stores and both path prefixes: 202 with the id, 204 while it
// runs, 200 once done, the upstream's response once, then 404.
func TestStoreAndFetch(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{})
		for _, prefix := range []string{"/api/v1/async/", "/_api/job/"} {
			id := n.submit("GET", "/gw/up/slow?n=1", "", "store")
			up.waitStarted(t)
			want(t, "GET while running", n.do("GET", prefix+id.String(), ""), http.StatusNoContent)
			want(t, "PUT while running", n.do("PUT", prefix+id.String(), ""), http.StatusNoContent)
			if r := n.do("GET", prefix+"pending", ""); !strings.Contains(string(r.body), id.String()) {
				t.Fatalf("pending list %s lacks %s", r, id)
			}
			// The id is the job's id in the API too.
			want(t, "the job in the API", n.do("GET", "/api/v1/jobs/"+id.String(), ""), http.StatusOK)

			close(up.release)
			n.waitState(id, "succeeded")
			up.release = make(chan struct{})
			want(t, "GET when done", n.do("GET", prefix+id.String(), ""), http.StatusOK)
			if r := n.do("GET", prefix+"done", ""); !strings.Contains(string(r.body), id.String()) {
				t.Fatalf("done list %s lacks %s", r, id)
			}
			r := n.do("PUT", prefix+id.String(), "")
			want(t, "PUT when done", r, http.StatusOK)
			if string(r.body) != "slow 1 done" || r.header.Get("X-Async-Id") != id.String() || r.header.Get("X-Arango-Async-Id") != id.String() {
				t.Fatalf("fetched %s with headers %v", r, r.header)
			}
			r = n.do("PUT", prefix+id.String(), "")
			want(t, "second PUT", r, http.StatusNotFound)
			if r.header.Get("X-Async-Id") != "" {
				t.Fatal("jobd's own 404 carries X-Async-Id")
			}
			want(t, "GET after fetch", n.do("GET", prefix+id.String(), ""), http.StatusNotFound)
			want(t, "the job in the API after fetch", n.do("GET", "/api/v1/jobs/"+id.String(), ""), http.StatusNotFound)
		}
	})
}

// TestAsyncRequestIntact: what the upstream gets from a queued request is
// what the caller sent, less the async and hop-by-hop headers; the stored
// response keeps the upstream's status, headers and body.
func TestAsyncRequestIntact(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{})
		body := "\x00binary é body"
		id := n.submit("PATCH", "/gw/up/echo?status=201&q=a%20b", body, "store", "X-Custom: v", "Content-Type: application/octet-stream")
		e := recv(t, up.echoed, "the echo")
		if e.Method != "PATCH" || e.Path != "/echo" || e.Query != "status=201&q=a%20b" || e.Body != body {
			t.Fatalf("upstream got %+v", e)
		}
		if e.Header.Get("X-Custom") != "v" || e.Header.Get("X-Async") != "" || e.Header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("upstream headers %v", e.Header)
		}
		n.waitState(id, "succeeded")
		r := n.do("PUT", "/api/v1/async/"+id.String(), "")
		want(t, "fetch", r, http.StatusCreated)
		var got struct{ Body string }
		if err := json.Unmarshal(r.body, &got); err != nil || got.Body != body || r.header.Get("X-Upstream") != "yes" {
			t.Fatalf("fetched %s %v", r, r.header)
		}
	})
}

// TestFireAndForget: X-Async: true is answered 202 without an id, runs,
// and keeps the upstream's status but not its body.
func TestFireAndForget(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{})
		n.submit("POST", "/gw/up/echo", "payload", "true")
		if e := recv(t, up.echoed, "the echo"); e.Body != "payload" {
			t.Fatalf("upstream got %+v", e)
		}
		// ArangoDB's own header works as well.
		r := n.do("POST", "/gw/up/echo", "again", "x-arango-async: true")
		want(t, "x-arango-async: true", r, http.StatusAccepted)
		recv(t, up.echoed, "the second echo")

		// The result keeps the upstream's status and headers, not its body.
		res, err := n.st.JobList(t.Context(), store.ListParams{Queue: gateway.Queue, Limit: 10})
		if err != nil || len(res.Jobs) != 2 {
			t.Fatalf("gateway jobs: %v, %v", res, err)
		}
		for _, j := range res.Jobs {
			j = n.waitState(j.ID, job.StateSucceeded)
			var stored gateway.Response
			if err := json.Unmarshal(j.Result, &stored); err != nil || stored.Status != http.StatusOK || stored.Body != nil || stored.Header.Get("X-Upstream") != "yes" {
				t.Fatalf("fire-and-forget result %s (%v)", j.Result, err)
			}
		}
	})
}

// TestIdempotencyKey: resubmitting with the same Idempotency-Key returns
// the first job's id and queues nothing.
func TestIdempotencyKey(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{})
		first := n.submit("POST", "/gw/up/echo", "a", "store", "Idempotency-Key: order-7")
		again := n.submit("POST", "/gw/up/echo", "a", "store", "Idempotency-Key: order-7")
		if again != first {
			t.Fatalf("resubmission got %s, want %s", again, first)
		}
		if c := n.jobCount(); c != 1 {
			t.Fatalf("%d jobs, want 1", c)
		}
		want(t, "overlong key", n.do("POST", "/gw/up/echo", "", "X-Async: store", "Idempotency-Key: "+strings.Repeat("k", 250)), http.StatusBadRequest)
	})
}

// TestIdempotencyKeyRequest: a key names one request, its upstream,
// method, path, body and async mode: sent again with other headers (a
// new trace, a request id) it is the same request; with another body,
// path or mode it is 422 idempotency-mismatch naming Idempotency-Key,
// without the first request's id, and nothing is queued.
func TestIdempotencyKeyRequest(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{})
		first := n.submit("POST", "/gw/up/echo?x=1", "a", "store", "Idempotency-Key: order-8",
			"traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "X-Request-Id: r1")
		again := n.submit("POST", "/gw/up/echo?x=1", "a", "store", "Idempotency-Key: order-8",
			"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "X-Request-Id: r2")
		if again != first {
			t.Fatalf("the same request with other headers got %s, want %s", again, first)
		}
		for what, r := range map[string]*response{
			"another body": n.do("POST", "/gw/up/echo?x=1", "b", "X-Async: store", "Idempotency-Key: order-8"),
			"another path": n.do("POST", "/gw/up/echo?x=2", "a", "X-Async: store", "Idempotency-Key: order-8"),
			"another mode": n.do("POST", "/gw/up/echo?x=1", "a", "X-Async: true", "Idempotency-Key: order-8"),
		} {
			want(t, what, r, http.StatusUnprocessableEntity)
			if typ := problemType(t, r); typ != api.ProblemIdempotencyMismatch || strings.Contains(string(r.body), first.String()) ||
				r.header.Get("X-Async-Id") != "" {
				t.Fatalf("%s: %s", what, r)
			}
		}
		if c := n.jobCount(); c != 1 {
			t.Fatalf("%d jobs, want 1", c)
		}
	})
}

// TestBackPressure: with MaxPending requests queued or running, a new
// async request is refused with 503 and Retry-After, and nothing is
// queued; the synchronous path still works.
func TestBackPressure(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{maxPending: 2, concurrency: 1})
		n.submit("GET", "/gw/up/slow?n=1", "", "store")
		up.waitStarted(t)
		n.submit("GET", "/gw/up/slow?n=2", "", "true") // queued behind it
		r := n.do("GET", "/gw/up/slow?n=3", "", "X-Async: store")
		want(t, "over the limit", r, http.StatusServiceUnavailable)
		if r.header.Get("Retry-After") == "" || r.header.Get("X-Async-Id") != "" {
			t.Fatalf("503 headers %v: want Retry-After and no id", r.header)
		}
		if got := problemType(t, r); got != gateway.ProblemBusy {
			t.Fatalf("problem type %q", got)
		}
		if c := n.jobCount(); c != 2 {
			t.Fatalf("%d jobs, want 2: the refused request was queued", c)
		}
		want(t, "sync under back-pressure", n.do("GET", "/gw/up/echo", ""), http.StatusOK)
	})
}

// TestRequestTooLarge: a body the job's args cannot hold is refused with
// 413 before anything is queued.
func TestRequestTooLarge(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	n := start(t, newDatabase(t, "sqlite"), up, options{})
	r := n.do("POST", "/gw/up/echo", strings.Repeat("x", 1<<20), "X-Async: store")
	want(t, "huge async body", r, http.StatusRequestEntityTooLarge)
	if c := n.jobCount(); c != 0 {
		t.Fatalf("%d jobs queued", c)
	}
}
