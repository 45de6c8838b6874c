package gateway_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/job"
)

// TestUpstreamFailures: a 5xx is retried up to max_attempts and then
// fetched as jobd's 502 (no X-Async-Id); a 503 that clears is retried into
// a success; a 4xx is the upstream's final answer, stored and fetched with
// X-Async-Id; a response over the size cap fails at once, without retries.
func TestUpstreamFailures(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{maxAttempts: 3, maxResponse: 1000})

		failing := n.submit("POST", "/gw/up/fail", "x", "store")
		j := n.waitState(failing, job.StateFailed)
		if j.Attempt != 3 || up.fails.Load() != 3 || !strings.Contains(j.LastError, "500") {
			t.Fatalf("failing upstream: attempt %d, %d calls, error %q; want 3 attempts, 3 calls, a 500", j.Attempt, up.fails.Load(), j.LastError)
		}
		want(t, "GET of a failed request", n.do("GET", "/api/v1/async/"+failing.String(), ""), http.StatusOK)
		r := n.do("PUT", "/api/v1/async/"+failing.String(), "")
		want(t, "PUT of a failed request", r, http.StatusBadGateway)
		if r.header.Get("X-Async-Id") != "" || problemType(t, r) != gateway.ProblemUpstreamFailed {
			t.Fatalf("failed fetch %s %v: want jobd's upstream-failed problem without X-Async-Id", r, r.header)
		}
		want(t, "PUT again", n.do("PUT", "/api/v1/async/"+failing.String(), ""), http.StatusNotFound)

		flaky := n.submit("GET", "/gw/up/flaky", "", "store")
		if j := n.waitState(flaky, job.StateSucceeded); j.Attempt != 2 {
			t.Fatalf("flaky upstream succeeded at attempt %d, want 2", j.Attempt)
		}
		r = n.do("PUT", "/_api/job/"+flaky.String(), "")
		want(t, "PUT of the retried request", r, http.StatusOK)
		if string(r.body) != "fine now" {
			t.Fatalf("fetched %s", r)
		}

		notFound := n.submit("GET", "/gw/up/echo?status=404", "", "store")
		if j := n.waitState(notFound, job.StateSucceeded); j.Attempt != 1 {
			t.Fatalf("a 4xx took %d attempts, want 1", j.Attempt)
		}
		r = n.do("PUT", "/api/v1/async/"+notFound.String(), "")
		want(t, "PUT of a 4xx", r, http.StatusNotFound)
		if r.header.Get("X-Async-Id") != notFound.String() {
			t.Fatalf("the upstream's 404 lacks X-Async-Id: %v", r.header)
		}

		large := n.submit("GET", "/gw/up/large?bytes=1001", "", "store")
		j = n.waitState(large, job.StateFailed)
		if j.Attempt != 1 || !strings.Contains(j.LastError, "1000-byte limit") {
			t.Fatalf("large response: attempt %d, error %q; want 1 attempt and the limit named", j.Attempt, j.LastError)
		}
		r = n.do("PUT", "/api/v1/async/"+large.String(), "")
		want(t, "PUT of a too large response", r, http.StatusBadGateway)
		if !strings.Contains(string(r.body), "1000-byte limit") {
			t.Fatalf("the problem does not say why: %s", r)
		}
		// At the limit exactly, it is stored.
		fits := n.submit("GET", "/gw/up/large?bytes=1000", "", "store")
		n.waitState(fits, job.StateSucceeded)
		if r := n.do("PUT", "/api/v1/async/"+fits.String(), ""); r.status != http.StatusOK || len(r.body) != 1000 {
			t.Fatalf("fetch at the limit: %d, %d bytes", r.status, len(r.body))
		}
	})
}

// TestCancel: PUT {id}/cancel aborts a running upstream call at once (the
// upstream sees its request cancelled), cancels a queued request, and
// answers 404 for an unknown id and 409 once the request is done.
func TestCancel(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{concurrency: 1})
		running := n.submit("GET", "/gw/up/slow?n=1", "", "store")
		if got := up.waitStarted(t); got != "1" {
			t.Fatalf("slow call %q started first", got)
		}
		queued := n.submit("GET", "/gw/up/slow?n=2", "", "store")

		r := n.do("PUT", "/api/v1/async/"+queued.String()+"/cancel", "")
		want(t, "cancel queued", r, http.StatusOK)
		n.waitState(queued, job.StateCanceled)

		r = n.do("PUT", "/_api/job/"+running.String()+"/cancel", "")
		want(t, "cancel running", r, http.StatusOK)
		if strings.TrimSpace(string(r.body)) != `{"result":true}` {
			t.Fatalf("cancel answered %s", r)
		}
		if got := recv(t, up.aborted, "the upstream call to be aborted"); got != "1" {
			t.Fatalf("aborted call %q, want 1", got)
		}
		j := n.waitState(running, job.StateCanceled)
		if j.Attempt != 1 {
			t.Fatalf("canceled request ran %d attempts", j.Attempt)
		}
		want(t, "GET canceled", n.do("GET", "/api/v1/async/"+running.String(), ""), http.StatusOK)
		r = n.do("PUT", "/api/v1/async/"+running.String(), "")
		want(t, "PUT canceled", r, http.StatusGone)
		if r.header.Get("X-Async-Id") != "" {
			t.Fatal("jobd's answer carries X-Async-Id")
		}
		want(t, "cancel unknown", n.do("PUT", "/api/v1/async/"+uuid.NewString()+"/cancel", ""), http.StatusNotFound)
		want(t, "cancel foobar", n.do("PUT", "/_api/job/foobar/cancel", ""), http.StatusNotFound)
		want(t, "cancel done", n.do("PUT", "/api/v1/async/"+queued.String()+"/cancel", ""), http.StatusConflict)
	})
}

// TestDelete: DELETE all / expired / {id} remove results, never pending
// requests, and answer {"result": true}; 400 for a missing or bad stamp
// and a missing type, 404 for an unknown id.
func TestDelete(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{})
		done := func() uuid.UUID {
			id := n.submit("GET", "/gw/up/echo", "", "store")
			n.waitState(id, job.StateSucceeded)
			return id
		}
		a, b, c := done(), done(), done()
		pending := n.submit("GET", "/gw/up/slow", "", "store")
		up.waitStarted(t)

		for _, path := range []string{"/api/v1/async/expired", "/api/v1/async/expired?stamp=soon", "/_api/job/expired?stamp="} {
			want(t, "DELETE "+path, n.do("DELETE", path, ""), http.StatusBadRequest)
		}
		want(t, "DELETE bare", n.do("DELETE", "/api/v1/async/", ""), http.StatusBadRequest)
		want(t, "DELETE unknown", n.do("DELETE", "/api/v1/async/"+uuid.NewString(), ""), http.StatusNotFound)
		want(t, "DELETE foobar", n.do("DELETE", "/_api/job/foobar", ""), http.StatusNotFound)
		want(t, "DELETE pending", n.do("DELETE", "/api/v1/async/"+pending.String(), ""), http.StatusConflict)

		past := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
		r := n.do("DELETE", "/api/v1/async/expired?stamp="+past, "")
		want(t, "DELETE expired (none)", r, http.StatusOK)
		if strings.TrimSpace(string(r.body)) != `{"result":true}` {
			t.Fatalf("DELETE answered %s", r)
		}
		want(t, "a result still there", n.do("GET", "/api/v1/async/"+a.String(), ""), http.StatusOK)

		want(t, "DELETE one", n.do("DELETE", "/api/v1/async/"+a.String(), ""), http.StatusOK)
		want(t, "GET deleted", n.do("GET", "/api/v1/async/"+a.String(), ""), http.StatusNotFound)
		want(t, "DELETE it again", n.do("DELETE", "/api/v1/async/"+a.String(), ""), http.StatusNotFound)

		future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
		want(t, "DELETE expired", n.do("DELETE", "/_api/job/expired?stamp="+future+".5", ""), http.StatusOK)
		want(t, "GET expired", n.do("GET", "/api/v1/async/"+b.String(), ""), http.StatusNotFound)

		later := done()
		want(t, "DELETE all", n.do("DELETE", "/_api/job/all", ""), http.StatusOK)
		for _, id := range []uuid.UUID{c, later} {
			want(t, "GET after DELETE all", n.do("GET", "/api/v1/async/"+id.String(), ""), http.StatusNotFound)
		}
		want(t, "the pending request survives", n.do("GET", "/api/v1/async/"+pending.String(), ""), http.StatusNoContent)
	})
}

// TestListsAndBadPaths: GET done / pending list ids oldest first, at most
// ?count=; a bad count or the bare collection is a 400, an id that is
// not one (foobar) a 404.
func TestListsAndBadPaths(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{concurrency: 1})
		var done []string
		for range 3 {
			id := n.submit("GET", "/gw/up/echo", "", "store")
			n.waitState(id, job.StateSucceeded)
			done = append(done, id.String())
		}
		running := n.submit("GET", "/gw/up/slow", "", "store")
		up.waitStarted(t)
		queued := n.submit("GET", "/gw/up/slow", "", "store")

		ids := func(path string) ([]string, string) {
			r := n.do("GET", path, "")
			want(t, "GET "+path, r, http.StatusOK)
			var got []string
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatalf("GET %s: %s: %v", path, r, err)
			}
			return got, r.header.Get("X-Total-Count")
		}
		if got, total := ids("/api/v1/async/done"); strings.Join(got, ",") != strings.Join(done, ",") || total != "3" {
			t.Fatalf("done = %v (total %s), want %v", got, total, done)
		}
		if got, total := ids("/_api/job/done?count=2"); strings.Join(got, ",") != strings.Join(done[:2], ",") || total != "3" {
			t.Fatalf("done?count=2 = %v (total %s), want the oldest two", got, total)
		}
		if got, _ := ids("/api/v1/async/pending"); strings.Join(got, ",") != running.String()+","+queued.String() {
			t.Fatalf("pending = %v, want [%s %s]", got, running, queued)
		}
		for _, path := range []string{
			"/api/v1/async/done?count=0", "/api/v1/async/pending?count=x",
			"/api/v1/async/", "/_api/job/", "/_api/job",
		} {
			want(t, "GET "+path, n.do("GET", path, ""), http.StatusBadRequest)
		}
		for _, path := range []string{"/api/v1/async/", "/_api/job/", "/_api/job"} {
			want(t, "PUT "+path, n.do("PUT", path, ""), http.StatusBadRequest)
		}
		want(t, "PUT foobar", n.do("PUT", "/_api/job/foobar", ""), http.StatusNotFound)
		want(t, "GET foobar", n.do("GET", "/api/v1/async/foobar", ""), http.StatusNotFound)
		want(t, "GET other", n.do("GET", "/_api/job/other", ""), http.StatusNotFound)
		want(t, "PUT unknown", n.do("PUT", "/api/v1/async/"+uuid.NewString(), ""), http.StatusNotFound)
		want(t, "GET unknown", n.do("GET", "/api/v1/async/"+uuid.NewString(), ""), http.StatusNotFound)
		want(t, "POST", n.do("POST", "/_api/job/done", ""), http.StatusMethodNotAllowed)

		// A job of the API is not an async request.
		r := n.do("POST", "/api/v1/jobs", `{"kind":"noop","queue":"other"}`, "Content-Type: application/json")
		want(t, "submit an API job", r, http.StatusCreated)
		var j api.Job
		if err := json.Unmarshal(r.body, &j); err != nil {
			t.Fatal(err)
		}
		want(t, "GET an API job", n.do("GET", "/api/v1/async/"+j.ID.String(), ""), http.StatusNotFound)
		want(t, "PUT an API job", n.do("PUT", "/api/v1/async/"+j.ID.String(), ""), http.StatusNotFound)
	})
}

// TestCancelOnAnotherNode: a cancel received by a node that does not run
// the request reaches the node that does at once, by the store's cancel
// notification (its heartbeat is an hour away), and that node aborts the
// upstream call.
func TestCancelOnAnotherNode(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	db := newDatabase(t, "postgres")
	worker := start(t, db, up, options{heartbeat: time.Hour})
	front := start(t, db, up, options{noWorkers: true})
	id := front.submit("GET", "/gw/up/slow?n=1", "", "store")
	up.waitStarted(t)
	want(t, "cancel through the other node", front.do("PUT", "/api/v1/async/"+id.String()+"/cancel", ""), http.StatusOK)
	recv(t, up.aborted, "the worker node to abort the call")
	worker.waitState(id, job.StateCanceled)
	want(t, "PUT canceled", front.do("PUT", "/_api/job/"+id.String(), ""), http.StatusGone)
}

// TestResultRoutesUnknownIDs: every result route, under /api/v1/async/
// and /_api/job/, answers 404 not-found for an id that is not a UUID,
// as for an unknown UUID: ArangoDB's contract is 404 for any unknown id.
func TestResultRoutesUnknownIDs(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{secret: "s3cret-admin-for-tests"})
		for _, prefix := range []string{"/api/v1/async/", "/_api/job/"} {
			for _, id := range []string{"foobar", "123", "0190b7a4-0000-7000-8000", "x%00y", "a/b", "%ff", uuid.NewString()} {
				for _, c := range []struct{ method, path string }{
					{"GET", prefix + id}, {"PUT", prefix + id}, {"PUT", prefix + id + "/cancel"}, {"DELETE", prefix + id},
				} {
					r := n.do(c.method, c.path, "")
					want(t, c.method+" "+c.path, r, http.StatusNotFound)
					if typ := problemType(t, r); typ != api.ProblemNotFound {
						t.Fatalf("%s %s: problem %s, want not-found", c.method, c.path, typ)
					}
				}
			}
		}
	})
}
