package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jobd/jobd/internal/httpapi"
)

// fuzzHandlers are the API over each store, for the fuzz targets.
func fuzzHandlers(f *testing.F) map[string]http.Handler {
	hs := map[string]http.Handler{}
	for _, d := range drivers {
		h, err := httpapi.New(httpapi.Config{Store: openStore(f, d), MaxBodyBytes: 8192, MaxArgsBytes: 4096})
		if err != nil {
			f.Fatal(err)
		}
		hs[d] = h
	}
	return hs
}

// FuzzSubmit: no body makes the submit or trigger handler answer 5xx or
// panic (a panic would surface as a 500 from the recovering root).
func FuzzSubmit(f *testing.F) {
	for _, c := range badBodies {
		f.Add(c.body)
	}
	for _, b := range []string{
		`{"kind":"k"}`,
		`{"kind":"k","queue":"q","args":{"a":[1,{"b":null}]},"priority":0,"run_at":"2030-01-01T00:00:00.123456789+02:00","max_attempts":1,"lease_ttl":"1h","lock_key":"l","partition_key":"p","idempotency_key":"i","unique":"active"}`,
		`{"kind":"k","args":{"big":123456789012345678901234567890}}`,
		`{"kind":"k","args":{"s":"\ud800"}}`,
		`{"kind":"k","args":{"\u0000":1}}`,
		`{"kind":"k","run_at":"0000-01-01T00:00:00Z"}`,
		`{"kind":"k","run_at":"9999-12-31T23:59:59Z"}`,
		`{"kind":"k","lease_ttl":"2562047h"}`,
		`{"kind":"k","max_attempts":2147483647,"priority":2147483647}`,
		`{"task":"k","available_at":"2030-01-01T00:00:00Z","lock_key":"x"}`,
		"{\"kind\":\"\xff\xfe\"}",
		"{\"kind\":\"k\",\"args\":{\"s\":\"\xff\"}}",
		`{"kind":"k","queue":"\u007f"}`,
	} {
		f.Add(b)
	}
	hs := fuzzHandlers(f)
	f.Fuzz(func(t *testing.T, body string) {
		for d, h := range hs {
			for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/trigger"} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body)))
				if rec.Code >= 500 {
					t.Errorf("%s: POST %s %q: status %d: %s", d, path, body, rec.Code, rec.Body)
				}
			}
		}
	})
}

// FuzzList: no query string makes the list handler answer 5xx or panic.
func FuzzList(f *testing.F) {
	for _, q := range []string{
		"", "limit=0", "limit=200", "limit=201", "limit=-1", "limit=99999999999999999999",
		"state=queued&state=running", "state=queued,failed", "state=", "state=bogus",
		"queue=q&kind=k&lock_key=l&partition_key=p",
		"queue=%00", "kind=%ff%fe", "lock_key=" + strings.Repeat("x", 300),
		"updated_since=2000-01-01T00:00:00Z", "updated_since=0000-01-01T00:00:00Z", "updated_since=9999-12-31T23:59:59.999999999Z",
		"updated_since=x", "cursor=", "cursor=AAAA", "cursor=bgAAAAAAAAAAAAAAAAAAAAA",
		"cursor=ZgAAAAAAAAAAAAAAAAAAAAB__________w&updated_since=2000-01-01T00:00:00Z",
		"cursor=ZgAAAAAAAAAAAAAAAAAAAACAAAAAAAAAAA&updated_since=2000-01-01T00:00:00Z",
		"a=1;b=2", "%zz", "&&&", "limit=1&limit=2", "unknown=1",
	} {
		f.Add(q)
	}
	hs := fuzzHandlers(f)
	f.Fuzz(func(t *testing.T, query string) {
		for d, h := range hs {
			req := httptest.NewRequest("GET", "/api/v1/jobs", nil)
			req.URL.RawQuery = query
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Errorf("%s: GET /api/v1/jobs?%s: status %d: %s", d, query, rec.Code, rec.Body)
			}
		}
	})
}
