package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// arangoDoc is a problem answer read with both sets of members: RFC
// 9457's and ArangoDB's.
type arangoDoc struct {
	Type         string `json:"type"`
	Status       int    `json:"status"`
	Field        string `json:"field"`
	Error        *bool  `json:"error"`
	ErrorNum     *int   `json:"errorNum"`
	ErrorMessage string `json:"errorMessage"`
	Code         int    `json:"code"`
}

// arango reads a problem answer and requires both sets of members, the
// ArangoDB ones being (errorNum, errorMessage) and code the status.
func arango(t *testing.T, what string, r *response, status int, typ string, errorNum int, message string) arangoDoc {
	t.Helper()
	want(t, what, r, status)
	var d arangoDoc
	if err := json.Unmarshal(r.body, &d); err != nil || !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("%s: not a problem answer: %s (%s)", what, r, r.header.Get("Content-Type"))
	}
	if d.Type != typ || d.Status != status || d.Error == nil || !*d.Error || d.ErrorNum == nil || *d.ErrorNum != errorNum ||
		d.ErrorMessage != message || d.Code != status {
		t.Fatalf("%s: %s; want type %s, status and code %d, error true, errorNum %d, errorMessage %q", what, r.body, typ, status, errorNum, message)
	}
	return d
}

// TestArangoAsyncOtherValues: x-arango-async with a value other than true
// or store runs the request synchronously, as ArangoDB does; X-Async,
// jobd's own header, still refuses such a value.
func TestArangoAsyncOtherValues(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{})
		for _, v := range []string{"yes", "1", "stored", "later"} {
			r := n.do("GET", "/gw/up/echo?status=203", "", "x-arango-async: "+v)
			want(t, "x-arango-async: "+v, r, http.StatusNonAuthoritativeInfo)
			if r.header.Get("X-Upstream") != "yes" || r.header.Get("X-Arango-Async-Id") != "" {
				t.Fatalf("x-arango-async: %s: %v, want the upstream's own answer", v, r.header)
			}
			recv(t, up.echoed, "the synchronous call")
		}
		want(t, "X-Async: later", n.do("GET", "/gw/up/echo", "", "X-Async: later"), http.StatusBadRequest)
		if c := n.jobCount(); c != 0 {
			t.Fatalf("%d jobs queued, want none", c)
		}
	})
}

// TestArangoErrorMembers: jobd's own answers on /_api/job/ and /gw/ carry
// ArangoDB's error, errorNum, errorMessage and code beside the RFC 9457
// members: a canceled request's fetch is 410 with errorNum 21, "canceled
// request"; the API's /api/v1/async/ answers stay RFC 9457 alone.
func TestArangoErrorMembers(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		dead := newUpstream(t)
		dead.Close()
		deadURL, err := url.Parse(dead.URL)
		if err != nil {
			t.Fatal(err)
		}
		const secret = "arango-admin-secret"
		n := start(t, db, up, options{secret: secret, concurrency: 1, maxPending: 1,
			more: []gateway.Upstream{{Name: "dead", URL: deadURL}}})

		noCred := "Authorization: Bearer wrong-" + secret
		arango(t, "no credential", n.do("GET", "/_api/job/done", "", noCred), http.StatusUnauthorized,
			api.ProblemUnauthorized, 11, "not authorized to execute this request")
		arango(t, "no credential on /gw/", n.do("GET", "/gw/up/echo", "", noCred), http.StatusUnauthorized,
			api.ProblemUnauthorized, 11, "not authorized to execute this request")
		arango(t, "GET foobar", n.do("GET", "/_api/job/foobar", ""), http.StatusNotFound, api.ProblemNotFound, 404, "not found")
		arango(t, "PUT no id", n.do("PUT", "/_api/job/", ""), http.StatusBadRequest, api.ProblemBadRequest, 400, "bad parameter")
		arango(t, "POST done", n.do("POST", "/_api/job/done", ""), http.StatusMethodNotAllowed, api.ProblemMethodNotAllowed, 405, "method not supported")
		arango(t, "unknown upstream", n.do("GET", "/gw/nope/x", ""), http.StatusNotFound, api.ProblemNotFound, 404, "not found")
		d := arango(t, "encoded dot segment", n.do("GET", "/gw/up/%2e%2e/x", ""), http.StatusBadRequest, api.ProblemBadRequest, 400, "bad parameter")
		if d.Field != "path" {
			t.Fatalf("the dot segment's problem names %q, want path", d.Field)
		}
		arango(t, "dead upstream", n.do("GET", "/gw/dead/x", ""), http.StatusBadGateway, api.ProblemUpstreamFailed, 500, "internal server error")

		id := n.submit("GET", "/gw/up/slow?n=1", "", "store")
		up.waitStarted(t)
		arango(t, "over the pending limit", n.do("GET", "/gw/up/echo", "", "x-arango-async: store"), http.StatusServiceUnavailable,
			api.ProblemBusy, 21003, "named queue is full")
		want(t, "cancel", n.do("PUT", "/_api/job/"+id.String()+"/cancel", ""), http.StatusOK)
		n.waitState(id, job.StateCanceled)
		arango(t, "cancel again", n.do("PUT", "/_api/job/"+id.String()+"/cancel", ""), http.StatusConflict, api.ProblemWrongState, 409, "conflict")
		arango(t, "fetch canceled", n.do("PUT", "/_api/job/"+id.String(), ""), http.StatusGone, api.ProblemCanceled, 21, "canceled request")

		r := n.do("GET", "/api/v1/async/"+uuid.NewString(), "")
		want(t, "the API's 404", r, http.StatusNotFound)
		if strings.Contains(string(r.body), "errorNum") {
			t.Fatalf("the API's own answer carries ArangoDB's members: %s", r.body)
		}
	})
}

// TestFireAndForgetNotListed: a fire-and-forget request (X-Async: true,
// or x-arango-async: true) is in neither GET pending nor GET done, on
// either prefix, while it waits, runs or is done, as ArangoDB lists only
// the requests whose result it keeps; it still runs, and counts against
// the pending limit.
func TestFireAndForgetNotListed(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{concurrency: 1})
		stored := n.submit("GET", "/gw/up/slow?n=1", "", "store")
		if got := up.waitStarted(t); got != "1" {
			t.Fatalf("call %q started first", got)
		}
		n.submit("GET", "/gw/up/slow?n=2", "", "true")
		want(t, "x-arango-async: true", n.do("GET", "/gw/up/slow?n=3", "", "x-arango-async: true"), http.StatusAccepted)
		res, err := n.st.JobList(t.Context(), store.ListParams{Queue: gateway.Queue, Kind: gateway.KindForget, Limit: 10})
		if err != nil || len(res.Jobs) != 2 {
			t.Fatalf("fire-and-forget jobs: %v, %v; want 2", res, err)
		}
		if !job.ReservedKind(gateway.KindForget) {
			t.Fatalf("kind %s is not reserved", gateway.KindForget)
		}
		only := func(path string) {
			t.Helper()
			r := n.do("GET", path, "")
			want(t, "GET "+path, r, http.StatusOK)
			var ids []string
			if err := json.Unmarshal(r.body, &ids); err != nil || len(ids) != 1 || ids[0] != stored.String() || r.header.Get("X-Total-Count") != "1" {
				t.Fatalf("GET %s = %s (total %s), want only %s", path, r.body, r.header.Get("X-Total-Count"), stored)
			}
		}
		for _, prefix := range []string{"/_api/job/", "/api/v1/async/"} {
			only(prefix + "pending")
		}
		up.unblock()
		n.waitState(stored, job.StateSucceeded)
		for _, j := range res.Jobs {
			n.waitState(j.ID, job.StateSucceeded)
		}
		for _, prefix := range []string{"/_api/job/", "/api/v1/async/"} {
			only(prefix + "done")
			want(t, "GET "+prefix+"a fire-and-forget id", n.do("GET", prefix+res.Jobs[0].ID.String(), ""), http.StatusNotFound)
		}
	})
}

// recorder is an upstream that records the escaped path of each call.
func recorder(t *testing.T) (*httptest.Server, <-chan string) {
	t.Helper()
	paths := make(chan string, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.EscapedPath()
	}))
	t.Cleanup(srv.Close)
	return srv, paths
}

// TestEncodedDotSegments: a path whose segments decode (once or more) to
// "..", with "/" or "\\" as separator, is refused 400 naming the path on
// the synchronous and the async paths alike, before anything is queued or
// sent; encoded characters that are not dot segments go upstream as the
// caller wrote them, below the upstream's base path.
func TestEncodedDotSegments(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		rec, paths := recorder(t)
		base, err := url.Parse(rec.URL + "/base/")
		if err != nil {
			t.Fatal(err)
		}
		n := start(t, db, up, options{more: []gateway.Upstream{{Name: "rec", URL: base}}})
		modes := [][]string{nil, {"X-Async: store"}, {"X-Async: true"}, {"x-arango-async: store"}}
		for _, path := range []string{
			"/%2e%2e/admin", "/%2E%2E/admin", "/a/..%2f..%2fadmin", "/a/..%5c..%5cadmin", "/%2e%2e%2fadmin",
			"/%252e%252e%252fadmin", "/a/%2e%2e", "/.%2e/admin", "/..;x/admin",
		} {
			for _, hdr := range modes {
				r := n.do("GET", "/gw/rec"+path, "", hdr...)
				want(t, "GET "+path+" "+strings.Join(hdr, ""), r, http.StatusBadRequest)
				var p api.Problem
				if err := json.Unmarshal(r.body, &p); err != nil || p.Type != api.ProblemBadRequest || p.Field != "path" || !strings.Contains(p.Detail, path) {
					t.Fatalf("GET %s: %s, want a bad-request problem naming the path", path, r.body)
				}
			}
		}
		if c := n.jobCount(); c != 0 {
			t.Fatalf("%d jobs queued by refused paths", c)
		}
		select {
		case p := <-paths:
			t.Fatalf("the upstream was called with %s", p)
		default:
		}
		want(t, "a sane encoded path", n.do("GET", "/gw/rec/a%2Fb%20c/d..e", ""), http.StatusOK)
		if got := recv(t, paths, "the synchronous call"); got != "/base/a%2Fb%20c/d..e" {
			t.Fatalf("the upstream got %s", got)
		}
		id := n.submit("GET", "/gw/rec/a%2Fb%20c/d..e", "", "store")
		if got := recv(t, paths, "the queued call"); got != "/base/a%2Fb%20c/d..e" {
			t.Fatalf("the upstream got %s from the queued request", got)
		}
		n.waitState(id, job.StateSucceeded)
	})
}

// TestForwardedHeaders: the synchronous and the async paths send the
// same X-Forwarded-* headers upstream, whatever the caller sent: its own
// X-Forwarded-For, Forwarded, X-Forwarded-Host and X-Forwarded-Proto are
// dropped, and X-Forwarded-For is the address it connected from.
func TestForwardedHeaders(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		n := start(t, db, up, options{})
		spoof := []string{"X-Forwarded-For: 203.0.113.9", "Forwarded: for=203.0.113.9;host=evil.example",
			"X-Forwarded-Host: evil.example", "X-Forwarded-Proto: https"}
		want(t, "sync", n.do("GET", "/gw/up/echo", "", spoof...), http.StatusOK)
		sync := recv(t, up.echoed, "the synchronous call").Header
		n.submit("GET", "/gw/up/echo", "", "store", spoof...)
		async := recv(t, up.echoed, "the queued call").Header
		host := strings.TrimPrefix(n.URL, "http://")
		for what, h := range map[string]http.Header{"sync": sync, "async": async} {
			if got := h.Values("X-Forwarded-For"); len(got) != 1 || got[0] != "127.0.0.1" {
				t.Errorf("%s: X-Forwarded-For %q, want only the caller's address", what, got)
			}
			if h.Get("Forwarded") != "" || h.Get("X-Forwarded-Host") != host || h.Get("X-Forwarded-Proto") != "http" {
				t.Errorf("%s: Forwarded %q, X-Forwarded-Host %q, X-Forwarded-Proto %q; want none, %s, http",
					what, h.Get("Forwarded"), h.Get("X-Forwarded-Host"), h.Get("X-Forwarded-Proto"), host)
			}
		}
		for _, name := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"} {
			if strings.Join(sync.Values(name), ",") != strings.Join(async.Values(name), ",") {
				t.Errorf("%s: sync %q, async %q", name, sync.Values(name), async.Values(name))
			}
		}
	})
}
