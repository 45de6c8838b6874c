package httpapi_test

import (
	"strings"
	"testing"

	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// badBodies are submissions refused with the status and field given.
var badBodies = []struct {
	body   string
	status int
	field  string
}{
	{`{"kind":`, 400, ""},
	{`{"kind":"k"`, 400, ""},
	{`not json`, 400, ""},
	{`{"kind":"k"} {"kind":"k"}`, 400, ""},
	{`["kind"]`, 400, ""},
	{`"kind"`, 400, ""},
	{`{"kind":"k","colour":"red"}`, 400, "colour"},
	{`{"kind":5}`, 400, "kind"},
	{`{"kind":"k","priority":"high"}`, 400, "priority"},
	{`{"kind":"k","priority":1.5}`, 400, "priority"},
	{`{"kind":"k","priority":99999999999999999999}`, 400, "priority"},
	{`{"kind":"k","max_attempts":"3"}`, 400, "max_attempts"},
	{`{"kind":"k","run_at":"tomorrow"}`, 400, "run_at"},
	{`{"kind":"k","run_at":"2025-01-02"}`, 400, "run_at"},
	{`{"kind":"k","run_at":1735689600}`, 400, "run_at"},
	{`{"kind":"k","lease_ttl":"forever"}`, 400, "lease_ttl"},
	{`{"kind":"k","lease_ttl":"60"}`, 400, "lease_ttl"},
	{`{"kind":"k","unique":true}`, 400, "unique"},
	{`{}`, 422, "kind"},
	{`{"kind":""}`, 422, "kind"},
	{`{"kind":"a\u0001b"}`, 422, "kind"},
	{`{"kind":"k","queue":"` + strings.Repeat("q", 129) + `"}`, 422, "queue"},
	{`{"kind":"k","args":[1,2]}`, 422, "args"},
	{`{"kind":"k","args":"{}"}`, 422, "args"},
	{`{"kind":"k","args":{"s":"a\u0000b"}}`, 422, "args"},
	{`{"kind":"k","priority":-1}`, 422, "priority"},
	{`{"kind":"k","priority":2147483648}`, 422, "priority"},
	{`{"kind":"k","max_attempts":-1}`, 422, "max_attempts"},
	{`{"kind":"k","lease_ttl":"10ms"}`, 422, "lease_ttl"},
	{`{"kind":"k","unique":"always"}`, 422, "unique"},
	{`{"kind":"k","lock_key":"` + strings.Repeat("x", 256) + `"}`, 422, "lock_key"},
	{`{"kind":"k","idempotency_key":"a\u0000"}`, 422, "idempotency_key"},
}

func TestBadInputWritesNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{MaxBodyBytes: 4096, MaxArgsBytes: 512})
		for _, c := range badBodies {
			r := s.do("POST", "/api/v1/jobs", c.body)
			if r.status != c.status {
				t.Errorf("%s: status %d, want %d (%s)", c.body, r.status, c.status, r.body)
				continue
			}
			r.problem(t, c.status, c.field)
		}
		for body, field := range map[string]string{
			`{"kind":"k","task":"k"}`:            "",
			`{"queue":"q"}`:                      "task",
			`{"task":"a","kind":"b"}`:            "task",
			`{"task":"a","available_at":"soon"}`: "available_at",
			`{"task":"a","run_at":"2025-01-01T00:00:00Z","available_at":"2025-01-01T00:00:00Z"}`: "available_at",
			`{"task":"a","max_attempts":3}`: "max_attempts",
		} {
			r := s.do("POST", "/api/v1/jobs/trigger", body)
			if field == "" {
				r.must(t, 201, nil)
				continue
			}
			if r.status != 400 && r.status != 422 {
				t.Errorf("trigger %s: status %d (%s)", body, r.status, r.body)
				continue
			}
			r.problem(t, r.status, field)
		}

		// Over the body limit: 413; args over their limit: 422.
		s.do("POST", "/api/v1/jobs", `{"kind":"k","args":{"pad":"`+strings.Repeat("x", 5000)+`"}}`).problem(t, 413, "")
		s.do("POST", "/api/v1/jobs", `{"kind":"k","args":{"pad":"`+strings.Repeat("x", 600)+`"}}`).problem(t, 422, "args")
		s.do("POST", "/api/v1/jobs", ``).problem(t, 400, "")
		s.do("POST", "/api/v1/jobs?wait=1s", `{"kind":"k"}`).problem(t, 400, "wait")

		if n := countJobs(t, st); n != 1 {
			t.Errorf("%d jobs after bad input, want only the one good trigger", n)
		}
	})
}

// TestMaxAttemptsExplicit: max_attempts sent as 0 or below is refused
// (422 naming it), not replaced by the default; omitted or null, it is
// the default 5. The trigger route has no max_attempts and refuses it.
func TestMaxAttemptsExplicit(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		for _, v := range []string{"0", "-1", "-2147483648", "-9223372036854775808"} {
			r := s.do("POST", "/api/v1/jobs", `{"kind":"k","max_attempts":`+v+`}`)
			if r.status != 422 {
				t.Errorf("max_attempts %s: status %d, want 422 (%s)", v, r.status, r.body)
				continue
			}
			r.problem(t, 422, "max_attempts")
			r = s.do("POST", "/api/v1/jobs/trigger", `{"task":"k","max_attempts":`+v+`}`)
			if r.status != 400 && r.status != 422 {
				t.Errorf("trigger max_attempts %s: status %d (%s)", v, r.status, r.body)
				continue
			}
			r.problem(t, r.status, "max_attempts")
		}
		if n := countJobs(t, st); n != 0 {
			t.Fatalf("%d jobs after refused submissions", n)
		}
		for body, want := range map[string]int{
			`{"kind":"k"}`: 5, `{"kind":"k","max_attempts":null}`: 5, `{"kind":"k","max_attempts":1}`: 1,
		} {
			if j := s.submit(t, body, 201); j.MaxAttempts != want {
				t.Errorf("%s: max_attempts %d, want %d", body, j.MaxAttempts, want)
			}
		}
	})
}
