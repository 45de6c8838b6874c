package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jobd/jobd/job"
)

// TestAuth: with authentication on, credentials are checked before
// anything is queued or forwarded, with the API's scopes (submit for
// /gw/, read for GET and PUT of results, admin for cancel and DELETE);
// jobd's own Authorization never reaches the upstream, whose credentials
// come from its URL.
func TestAuth(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		up := newUpstream(t)
		withUser := strings.Replace(up.URL, "http://", "http://svc:pw@", 1)
		n := start(t, db, up, options{secret: "s3cret-admin-for-tests", upstreamURL: withUser})

		for _, cred := range []string{"Authorization: Bearer wrong", "Authorization: ", "Authorization: Bearer jobd_000000000000_" + strings.Repeat("0", 64)} {
			r := n.do("POST", "/gw/up/echo", "x", cred, "X-Async: store")
			want(t, "async with "+cred, r, http.StatusUnauthorized)
			if r.header.Get("WWW-Authenticate") == "" {
				t.Fatal("401 without WWW-Authenticate")
			}
			want(t, "sync with "+cred, n.do("GET", "/gw/up/echo", "", cred), http.StatusUnauthorized)
			want(t, "compat with "+cred, n.do("GET", "/_api/job/done", "", cred), http.StatusUnauthorized)
			want(t, "async API with "+cred, n.do("GET", "/api/v1/async/done", "", cred), http.StatusUnauthorized)
		}
		if c := n.jobCount(); c != 0 || len(up.echoed) != 0 {
			t.Fatalf("refused requests reached the upstream (%d calls) or the queue (%d jobs)", len(up.echoed), c)
		}

		// The admin secret may do everything; the upstream sees its own
		// credential, not jobd's.
		want(t, "sync", n.do("GET", "/gw/up/echo", ""), http.StatusOK)
		if got := recv(t, up.echoed, "the sync echo").Header.Get("Authorization"); got != "Basic c3ZjOnB3" {
			t.Fatalf("upstream got Authorization %q, want its own Basic credential", got)
		}
		id := n.submit("GET", "/gw/up/echo", "", "store")
		if got := recv(t, up.echoed, "the async echo").Header.Get("Authorization"); got != "Basic c3ZjOnB3" {
			t.Fatalf("upstream got Authorization %q, want its own Basic credential", got)
		}
		var stored struct {
			Headers map[string][]string `json:"headers"`
		}
		j := n.waitState(id, job.StateSucceeded)
		if err := json.Unmarshal(j.Args, &stored); err != nil || stored.Headers["Authorization"] != nil || strings.Contains(string(j.Args), "s3cret-admin-for-tests") {
			t.Fatalf("the queued request kept jobd's credential: %s", j.Args)
		}

		submitter, reader := n.key("submit"), n.key("read")
		id2 := n.submit("GET", "/gw/up/echo", "", "store", "Authorization: Bearer "+submitter)
		recv(t, up.echoed, "the echo")
		n.waitState(id2, job.StateSucceeded)
		want(t, "read with a reader key", n.do("GET", "/api/v1/async/"+id2.String(), "", "Authorization: Bearer "+reader), http.StatusOK)
		for _, c := range []struct {
			method, path, key string
		}{
			{"POST", "/gw/up/echo", reader},
			{"GET", "/api/v1/async/" + id2.String(), submitter},
			{"GET", "/_api/job/" + id2.String(), submitter},
			{"DELETE", "/api/v1/async/" + id2.String(), reader},
			{"DELETE", "/_api/job/all", reader},
			{"PUT", "/_api/job/" + id2.String() + "/cancel", reader},
		} {
			want(t, c.method+" "+c.path+" without the scope", n.do(c.method, c.path, "", "Authorization: Bearer "+c.key, "X-Async: store"), http.StatusForbidden)
		}
		if c := n.jobCount(); c != 2 {
			t.Fatalf("%d jobs, want 2", c)
		}
		want(t, "fetch with a reader key", n.do("PUT", "/_api/job/"+id2.String(), "", "Authorization: Bearer "+reader), http.StatusOK)
	})
}

// key creates an API key with one scope.
func (n *node) key(scope string) string {
	n.t.Helper()
	r := n.do("POST", "/api/v1/keys", `{"name":"k","scopes":["`+scope+`"]}`, "Content-Type: application/json")
	want(n.t, "create key", r, http.StatusCreated)
	var k struct{ Key string }
	if err := json.Unmarshal(r.body, &k); err != nil || k.Key == "" {
		n.t.Fatalf("key answer %s: %v", r, err)
	}
	return k.Key
}
