package surface_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// TestFuzzFindings replays, on both stores, each thing the fuzz test and
// the auth matrix found, with the answer it must get now.
func TestFuzzFindings(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	eachStore(t, func(t *testing.T, driver string) {
		n := startNode(t, driver)
		admin := "Bearer " + n.creds.admin
		for _, c := range []struct {
			finding      string
			method, path string
			body         string
			header       []string // "Name: value"
			cred         string
			status       int
			field        string
		}{
			{"an unknown upstream was named before the credential was checked",
				"GET", "/gw/nope/x", "", nil, "", 401, ""},
			{"an unknown upstream was named before the credential was checked",
				"POST", "/gw/nope/x", "{}", []string{"X-Async: store"}, "Bearer " + n.creds.read, 403, ""},
			{"(with a credential, an unknown upstream is still 404)",
				"GET", "/gw/nope/x", "", nil, admin, 404, ""},
			{"a worker id of invalid UTF-8 was a 500 on PostgreSQL",
				"DELETE", "/api/v1/workers/%c3%28", "", nil, admin, 400, "id"},
			{"a worker id with NUL was a 500 on PostgreSQL",
				"POST", "/api/v1/workers/%00/enable", "", nil, admin, 400, "id"},
			{"a worker id with NUL was a 500 on PostgreSQL",
				"POST", "/api/v1/workers/a%00b/disable", "", nil, admin, 400, "id"},
			{"a process id of invalid UTF-8 was a 500 on PostgreSQL",
				"GET", "/api/v1/processes/ns/%c3%28?history_limit=2", "", nil, admin, 400, "id"},
			{"a process id of invalid UTF-8 was a 500 on PostgreSQL",
				"DELETE", "/api/v1/processes/ns/%ff", "", nil, admin, 400, "id"},
			{"a process id with NUL was refused naming lock_key",
				"POST", "/api/v1/processes/ns/a%00b/call", `{"args":{}}`, nil, admin, 400, "id"},
			{"a process id too long for its lock key was refused naming lock_key",
				"POST", "/api/v1/processes/ns/" + strings.Repeat("p", 250), "", nil, admin, 400, "id"},
			{"an Idempotency-Key too long for its process was refused naming idempotency_key",
				"POST", "/api/v1/processes/ns/p1/call", "", []string{"Idempotency-Key: " + strings.Repeat("k", 250)}, admin, 400, "Idempotency-Key"},
			{"an Idempotency-Key of invalid UTF-8 was stored mangled",
				"POST", "/api/v1/processes/ns/p1", "", []string{"Idempotency-Key: k\xff"}, admin, 400, "Idempotency-Key"},
			{"?after= of invalid UTF-8 was a 500 on PostgreSQL",
				"GET", "/api/v1/processes/ns?after=%ff", "", nil, admin, 400, "after"},
			{"args nested deeper than answers can carry were kept",
				"POST", "/api/v1/jobs", `{"kind":"k","args":{"a":` + deep(job.MaxJSONDepth) + `}}`, nil, admin, 422, "args"},
			{"a worker's metadata nested too deep was kept",
				"POST", "/api/v1/workers", `{"name":"w","metadata":{"a":` + deep(job.MaxJSONDepth) + `}}`, nil, admin, 422, "metadata"},
			{"invalid UTF-8 in a name became U+FFFD silently",
				"POST", "/api/v1/keys", "{\"name\":\"k\xff\",\"scopes\":[\"read\"]}", nil, admin, 422, "name"},
		} {
			hdr := http.Header{"Content-Type": {"application/json"}}
			for _, h := range c.header {
				k, v, _ := strings.Cut(h, ": ")
				hdr.Set(k, v)
			}
			before, err := n.fingerprint(nil)
			if err != nil {
				t.Fatal(err)
			}
			a, err := n.send(request{method: c.method, path: c.path, body: []byte(c.body), noBody: c.body == "", header: hdr, cred: c.cred}, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var p api.Problem
			if a.status != c.status || json.Unmarshal(a.body, &p) != nil || p.Field != c.field {
				t.Errorf("%s: %s %.80s: %d %s, want %d naming %q", c.finding, c.method, c.path, a.status, a.body, c.status, c.field)
			}
			after, err := n.fingerprint(nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := before.diff(after); diff != "" {
				t.Errorf("%s: refused, yet the database changed: %s", c.finding, diff)
			}
		}

		// Args as deep as may be kept come back in a list answer that
		// encoding/json (and so the Go client) can read.
		var j api.Job
		n.mustJSON("POST", "/api/v1/jobs", `{"kind":"k","queue":"deep","args":{"a":`+deep(job.MaxJSONDepth-1)+`}}`, 201, &j)
		var list api.JobList
		n.mustJSON("GET", "/api/v1/jobs?queue=deep", "", 200, &list)
		if len(list.Jobs) != 1 || list.Jobs[0].ID != j.ID {
			t.Fatalf("the deep job is not listed: %+v", list)
		}
	})
}
