package httpapi_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

const adminSecret = "the-admin-secret-0123456789"

func TestAuthScopes(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		job := s.submit(t, `{"kind":"k"}`, 201)
		unknownJob := "/api/v1/jobs/0190b7a4-0000-7000-8000-000000000000"

		// Public routes need nothing.
		s.do("GET", "/health", "", "Authorization: ").must(t, 200, nil)
		s.do("GET", "/openapi.json", "", "Authorization: ").must(t, 200, nil)

		// Missing or wrong credentials: 401, whether the job exists or not.
		for _, auth := range []string{"", "Bearer", "Bearer wrong", "Basic " + adminSecret, "Bearer " + adminSecret + "x",
			"Bearer jobd_000000000000_" + strings.Repeat("0", 64)} {
			for _, path := range []string{"/api/v1/jobs/" + job.ID.String(), unknownJob, "/status"} {
				r := s.do("GET", path, "", "Authorization: "+auth)
				r.problem(t, 401, "")
				if r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("401 without WWW-Authenticate")
				}
			}
		}

		keys := map[string]string{}
		for i, scopes := range []string{`["submit"]`, `["read"]`, `["admin"]`, `["submit","read"]`} {
			var k api.Key
			r := s.do("POST", "/api/v1/keys", fmt.Sprintf(`{"name":"key %d","scopes":%s}`, i, scopes)).must(t, 201, &k)
			if !regexp.MustCompile(`^jobd_[0-9a-f]{12}_[0-9a-f]{64}$`).MatchString(k.Key) || k.ID == "" ||
				!strings.Contains(k.Key, "_"+k.Prefix+"_") || r.header.Get("Location") != "/api/v1/keys/"+k.ID {
				t.Errorf("created key %+v", k)
			}
			keys[scopes] = k.Key
		}
		submitKey, readKey, adminKey, bothKey := keys[`["submit"]`], keys[`["read"]`], keys[`["admin"]`], keys[`["submit","read"]`]

		type call struct{ method, path, body string }
		var (
			submit = []call{{"POST", "/api/v1/jobs", `{"kind":"k"}`}, {"POST", "/api/v1/jobs/trigger", `{"task":"k"}`}}
			read   = []call{{"GET", "/api/v1/jobs/" + job.ID.String(), ""}, {"GET", "/api/v1/jobs", ""},
				{"GET", "/api/v1/jobs/" + job.ID.String() + "/events", ""}, {"GET", "/api/v1/jobs/" + job.ID.String() + "/status", ""},
				{"GET", "/api/v1/queues", ""}, {"GET", "/status", ""}}
			admin = []call{{"POST", "/api/v1/queues/default/pause", ""}, {"POST", "/api/v1/queues/default/resume", ""},
				{"GET", "/api/v1/keys", ""}}
			// Checked before the job is looked up: 403, never 404.
			adminUnknown = []call{{"POST", unknownJob + "/cancel", ""}, {"POST", unknownJob + "/retry", ""}}
		)
		check := func(key string, calls []call, want int) {
			t.Helper()
			for _, c := range calls {
				r := s.do(c.method, c.path, c.body, "Authorization: Bearer "+key)
				if r.status != want {
					t.Errorf("%s %s with a key for %s: status %d, want %d (%s)", c.method, c.path, scopeOf(keys, key), r.status, want, r.body)
				}
			}
		}
		check(submitKey, submit, 201)
		check(submitKey, read, 403)
		check(submitKey, admin, 403)
		check(submitKey, adminUnknown, 403)
		check(readKey, read, 200)
		check(readKey, submit, 403)
		check(readKey, admin, 403)
		check(readKey, adminUnknown, 403)
		check(bothKey, read, 200)
		check(bothKey, adminUnknown, 403)
		check(adminKey, read, 200)
		check(adminKey, admin, 200)
		check(adminKey, adminUnknown, 404)
		check(adminSecret, adminUnknown, 404)

		// Keys are listed without secrets, and revoked ones stop working.
		var list api.KeyList
		r := s.do("GET", "/api/v1/keys", "").must(t, 200, &list)
		if len(list.Keys) != 4 {
			t.Fatalf("%d keys listed", len(list.Keys))
		}
		for _, k := range keys {
			if strings.Contains(string(r.body), k[len(k)-64:]) {
				t.Error("the key list shows a secret")
			}
		}
		var readID string
		for _, k := range list.Keys {
			if k.Key != "" {
				t.Errorf("listed key %s carries its secret", k.ID)
			}
			if len(k.Scopes) == 1 && k.Scopes[0] == "read" {
				readID = k.ID
			}
		}
		s.do("DELETE", "/api/v1/keys/"+readID, "", "Authorization: Bearer "+adminKey).must(t, 204, nil)
		s.do("DELETE", "/api/v1/keys/"+readID, "").problem(t, 404, "")
		s.do("GET", "/api/v1/jobs", "", "Authorization: Bearer "+readKey).problem(t, 401, "")

		// Bad key requests.
		s.do("POST", "/api/v1/keys", `{"name":"x","scopes":["read","root"]}`).problem(t, 422, "scopes")
		s.do("POST", "/api/v1/keys", `{"name":"x","scopes":[]}`).problem(t, 422, "scopes")
		s.do("POST", "/api/v1/keys", `{"name":"","scopes":["read"]}`).problem(t, 422, "name")
		s.do("POST", "/api/v1/keys", `{"name":"x","scopes":"read"}`).problem(t, 400, "scopes")
		s.do("DELETE", "/api/v1/keys/not-an-id", "").problem(t, 400, "id")

		// No credential ever reaches the log.
		logs := s.logs.String()
		for _, secret := range append([]string{adminSecret}, submitKey, readKey, adminKey, bothKey) {
			if strings.Contains(logs, secret) || strings.Contains(logs, secret[len(secret)-20:]) {
				t.Errorf("the log shows a credential")
			}
		}
	})
}

func scopeOf(keys map[string]string, key string) string {
	for scopes, k := range keys {
		if k == key {
			return scopes
		}
	}
	return "the admin secret"
}

// TestOpenWithoutSecret: with no admin secret every route is open.
func TestOpenWithoutSecret(t *testing.T) {
	s := newServer(t, openStore(t, "sqlite"), httpapi.Config{})
	s.do("GET", "/api/v1/jobs", "").must(t, 200, nil)
	s.do("GET", "/api/v1/keys", "").must(t, 200, nil)
	s.do("POST", "/api/v1/jobs", `{"kind":"k"}`, "Authorization: Bearer whatever").must(t, 201, nil)
}
