package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// TestJSONBodiesOnOpenServer: without credentials, a JSON route's body
// must be declared JSON (415 unsupported-media-type otherwise, naming
// Content-Type, and nothing written); with credentials the rule is not
// applied.
func TestJSONBodiesOnOpenServer(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		for _, ct := range []string{"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
			"multipart/form-data; boundary=x", "", "application/xml", "application/jsonx", "json", ";;"} {
			p := s.do("POST", "/api/v1/jobs", `{"kind":"k"}`, "Content-Type: "+ct).problem(t, 415, "Content-Type")
			if p.Type != api.ProblemUnsupportedMediaType {
				t.Fatalf("Content-Type %q: %+v", ct, p)
			}
		}
		if n := countJobs(t, st); n != 0 {
			t.Fatalf("%d jobs after refused bodies", n)
		}
		for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/vnd.jobd+json"} {
			s.do("POST", "/api/v1/jobs", `{"kind":"k"}`, "Content-Type: "+ct).must(t, 201, nil)
		}

		// Every route that reads a JSON body, the pages' targets first.
		j := s.submit(t, `{"kind":"k"}`, 201)
		for _, c := range []struct{ method, path, body string }{
			{"PUT", "/api/v1/queues/default", `{"global_limit":1}`},
			{"POST", "/api/v1/keys", `{"name":"k","scopes":["read"]}`},
			{"POST", "/api/v1/workers", `{"name":"w"}`},
			{"PUT", "/api/v1/schedules/nightly", `{"cron":"0 3 * * *","job":{"kind":"k"}}`},
			{"POST", "/api/v1/jobs/trigger", `{"task":"k"}`},
			{"POST", "/api/v1/jobs/" + j.ID.String() + "/rerun", `{"args":{}}`},
		} {
			s.do(c.method, c.path, c.body, "Content-Type: text/plain").problem(t, 415, "Content-Type")
		}
		// A route without a body needs no type.
		s.do("POST", "/api/v1/queues/default/pause", "").must(t, 200, nil)

		// With credentials, a browser cannot send them without a
		// preflight: the type is not checked.
		auth := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		auth.do("POST", "/api/v1/jobs", `{"kind":"k"}`, "Content-Type: text/plain").must(t, 201, nil)
	})
}

// TestCrossSiteRefused: a browser's request for a page of another site
// (Sec-Fetch-Site, or Origin from a browser without it) is refused 403
// on every route, reads included, before anything is done; same-origin
// requests, the user's own (none) and programs' (neither header) pass.
func TestCrossSiteRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		host := strings.TrimPrefix(s.URL, "http://")
		refused := [][]string{
			{"Sec-Fetch-Site: cross-site"},
			{"Sec-Fetch-Site: same-site"}, // another port of the same host
			{"Sec-Fetch-Site: cross-site", "Origin: " + s.URL},
			{"Origin: http://evil.example"},
			{"Origin: null"},
			{"Origin: http://127.0.0.1:1"},
			{"Origin: https://" + host},
			{"Origin: " + s.URL + "/path"},
		}
		for _, hdr := range refused {
			for _, c := range []struct{ method, path, body string }{
				{"POST", "/api/v1/jobs", `{"kind":"k"}`},
				{"POST", "/api/v1/queues/default/pause", ""},
				{"GET", "/api/v1/jobs", ""},
				{"GET", "/health", ""},
				{"GET", "/nowhere", ""},
			} {
				if p := s.do(c.method, c.path, c.body, hdr...).problem(t, 403, ""); p.Type != api.ProblemForbidden {
					t.Fatalf("%s %s %v: %+v", c.method, c.path, hdr, p)
				}
			}
		}
		if n := countJobs(t, st); n != 0 {
			t.Fatalf("%d jobs after refused requests", n)
		}
		qs, err := st.QueueList(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Paused {
				t.Fatalf("a refused request paused queue %s", q.Name)
			}
		}
		for _, hdr := range [][]string{
			nil,
			{"Sec-Fetch-Site: same-origin", "Origin: " + s.URL},
			{"Sec-Fetch-Site: none"},
			{"Origin: " + s.URL},
			{"Origin: HTTP://" + strings.ToUpper(host)},
			{"Origin: https://" + host, "X-Forwarded-Proto: https"}, // behind a TLS proxy
		} {
			s.do("POST", "/api/v1/jobs", `{"kind":"k"}`, hdr...).must(t, 201, nil)
		}
	})
}

// TestCrossSiteNavigations: a page (the dashboard's) may be the target of
// a link from another site, not of a form or a fetch.
func TestCrossSiteNavigations(t *testing.T) {
	for _, c := range []struct {
		method  string
		hdr     []string
		refused bool
	}{
		{"GET", []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"}, false},
		{"HEAD", []string{"Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: navigate"}, false},
		{"POST", []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate"}, true},
		{"GET", []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: iframe"}, true},
		{"GET", []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors"}, true},
		{"GET", []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: cors"}, true},
	} {
		r := httptest.NewRequest(c.method, "http://127.0.0.1:8080/ui/", nil)
		for _, h := range c.hdr {
			k, v, _ := strings.Cut(h, ": ")
			r.Header.Set(k, v)
		}
		if got := httpapi.CrossSite(r, true); got != c.refused {
			t.Errorf("%s %v: CrossSite %v, want %v", c.method, c.hdr, got, c.refused)
		}
		if !httpapi.CrossSite(r, false) {
			t.Errorf("%s %v: not cross-site for an API route", c.method, c.hdr)
		}
	}
}

// TestLoopbackHostsOnly: a server listening on loopback answers loopback
// names only (DNS rebinding), 403 forbidden naming Host for the rest.
func TestLoopbackHostsOnly(t *testing.T) {
	h := httpapi.LoopbackHostsOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	for host, ok := range map[string]bool{
		"localhost": true, "localhost:8080": true, "LOCALHOST.:8080": true, "jobd.localhost:8080": true,
		"127.0.0.1": true, "127.0.0.1:8080": true, "127.9.9.9:1": true, "[::1]:8080": true, "[::1]": true,
		"evil.example": false, "evil.example:8080": false, "127.0.0.1.nip.io:8080": false, "localhost.evil.example": false,
		"10.0.0.1:8080": false, "0.0.0.0:8080": false, "[::2]:8080": false, "[::ffff:10.0.0.1]:80": false,
	} {
		r := httptest.NewRequest("GET", "/api/v1/jobs", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if (rec.Code == 204) != ok {
			t.Errorf("Host %q: %d, want allowed %v", host, rec.Code, ok)
		}
		if !ok && (rec.Code != 403 || rec.Header().Get("Content-Type") != api.ProblemContentType || !strings.Contains(rec.Body.String(), `"field":"Host"`)) {
			t.Errorf("Host %q: %d %s", host, rec.Code, rec.Body)
		}
	}
}
