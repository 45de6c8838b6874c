package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/store"
)

const secret = "s3cret-admin-for-tests"

func mustUUID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRedirects: / and /ui go to /ui/; the API keeps every other path.
func TestRedirects(t *testing.T) {
	d := newDash(t, openStore(t, "sqlite"), dashOptions{})
	b := d.browser()
	for _, path := range []string{"/", "/ui"} {
		if p := b.get(path); p.status != http.StatusFound || p.location() != "/ui/" {
			t.Errorf("GET %s: %d to %q, want 302 to /ui/", path, p.status, p.location())
		}
	}
	if p := b.get("/health"); p.status != http.StatusOK {
		t.Errorf("GET /health: %d", p.status)
	}
	if p := b.get("/nothing"); p.status != http.StatusNotFound || !strings.Contains(p.header.Get("Content-Type"), "problem+json") {
		t.Errorf("GET /nothing: %d %s, want the API's 404 problem", p.status, p.header.Get("Content-Type"))
	}
	if p := b.get("/ui/nothing"); p.status != http.StatusNotFound || !strings.Contains(p.body, "no page") {
		t.Errorf("GET /ui/nothing: %d", p.status)
	}
}

// TestLogin: with an admin secret a page sends the browser to the login
// form; a bad key is refused; the admin secret or a read key starts a
// session whose cookie holds no key; logout ends it.
func TestLogin(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		readKey := d.key("viewer", api.ScopeRead)
		submitKey := d.key("submitter", api.ScopeSubmit)

		b := d.browser()
		p := b.get("/ui/jobs?state=queued")
		if p.status != http.StatusSeeOther || p.location() != "/ui/login?next="+url.QueryEscape("/ui/jobs?state=queued") {
			t.Fatalf("GET /ui/jobs without a session: %d to %q", p.status, p.location())
		}
		if p := b.get("/ui/summary"); p.status != http.StatusSeeOther {
			t.Fatalf("GET /ui/summary without a session: %d", p.status)
		}
		if p := b.get("/ui/jobs/" + uuid.NewString() + "/stream"); p.status != http.StatusSeeOther {
			t.Fatalf("GET a job's stream without a session: %d", p.status)
		}

		tok := b.token("/ui/login")
		for _, bad := range []string{"", "wrong", secret + "x", submitKey.Key} {
			p := b.post("/ui/login", url.Values{"csrf": {tok}, "key": {bad}})
			if p.status != http.StatusUnauthorized && p.status != http.StatusForbidden {
				t.Errorf("login with %q: %d, want 401 or 403", bad, p.status)
			}
			if len(b.hc.Jar.Cookies(mustURL(t, d.URL+"/ui/"))) != 1 {
				t.Errorf("login with %q set a session cookie", bad)
			}
		}

		for _, key := range []string{secret, readKey.Key} {
			b := d.browser()
			tok := b.token("/ui/login")
			resp, err := b.hc.Do(formRequest(t, d.URL+"/ui/login", url.Values{"csrf": {tok}, "key": {key}, "next": {"/ui/workers"}}, d.URL))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/workers" {
				t.Fatalf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			var session *http.Cookie
			for _, c := range resp.Cookies() {
				if c.Name == "jobd_session" {
					session = c
				}
			}
			switch {
			case session == nil:
				t.Fatal("login set no session cookie")
			case !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Secure:
				t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP", session)
			case strings.Contains(session.Value, key) || strings.Contains(session.Value, key[len(key)-8:]):
				t.Errorf("the session cookie holds the key")
			}
			if p := b.get("/ui/workers"); p.status != http.StatusOK {
				t.Fatalf("GET /ui/workers in a session: %d", p.status)
			}
			tok = b.token("/ui/")
			if p := b.post("/ui/logout", url.Values{"csrf": {tok}}); p.status != http.StatusSeeOther {
				t.Fatalf("logout: %d", p.status)
			}
			if p := b.get("/ui/workers"); p.status != http.StatusSeeOther {
				t.Fatalf("GET /ui/workers after logout: %d", p.status)
			}
		}
	})
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func formRequest(t testing.TB, target string, form url.Values, origin string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	return req
}

// TestSecureCookieOverTLS: over HTTPS the session cookie is Secure.
func TestSecureCookieOverTLS(t *testing.T) {
	d := newDash(t, openStore(t, "sqlite"), dashOptions{Secret: secret, TLS: true})
	b := d.browser()
	tok := b.token("/ui/login")
	resp, err := b.hc.Do(formRequest(t, d.URL+"/ui/login", url.Values{"csrf": {tok}, "key": {secret}}, d.URL))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login over TLS: %d", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "jobd_session" && !c.Secure {
			t.Errorf("session cookie over TLS is not Secure")
		}
	}
}

// TestReadKeyWritesNothing: a read key's pages have no form that writes,
// and its posts are refused even with a good token.
func TestReadKeyWritesNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		j := d.submit(api.SubmitRequest{Kind: "noop"})
		w, err := d.api.CreateWorker(context.Background(), api.WorkerRequest{Name: "gpu-1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.api.SetSchedule(context.Background(), "hourly", api.ScheduleRequest{Cron: "@hourly", Job: api.ScheduleJob{Kind: "noop"}}); err != nil {
			t.Fatal(err)
		}
		b := d.browser()
		b.login(d.key("viewer", api.ScopeRead).Key)
		for _, path := range []string{"/ui/", "/ui/jobs", "/ui/jobs/" + j.ID.String(), "/ui/workers", "/ui/schedules", "/ui/processes", "/ui/async"} {
			p := b.get(path)
			if p.status != http.StatusOK {
				t.Fatalf("GET %s: %d", path, p.status)
			}
			for _, write := range []string{`class="write`, `/cancel"`, `/retry"`, `/rerun"`, `/pause"`, `/trigger"`, `/disable"`, `/delete"`, `/ui/jobs/bulk`} {
				if strings.Contains(p.body, write) {
					t.Errorf("GET %s as a read key: the page holds %s", path, write)
				}
			}
			if !strings.Contains(p.body, "read only") {
				t.Errorf("GET %s: the page does not say it is read only", path)
			}
		}
		for _, action := range []string{
			"/ui/jobs/" + j.ID.String() + "/cancel", "/ui/queues/default/pause",
			"/ui/workers/" + w.Worker.ID + "/disable", "/ui/workers/" + w.Worker.ID + "/delete",
			"/ui/jobs/" + j.ID.String() + "/rerun", "/ui/schedules/hourly/pause",
		} {
			if p := b.act("/ui/", action, nil); p.status != http.StatusForbidden {
				t.Errorf("POST %s as a read key: %d, want 403", action, p.status)
			}
		}
		if p := b.act("/ui/", "/ui/jobs/bulk", url.Values{"action": {"cancel"}, "id": {j.ID.String()}}); p.status != http.StatusForbidden {
			t.Errorf("bulk cancel as a read key: %d, want 403", p.status)
		}
		if got := d.job(j.ID.String()); got.CancelRequested || got.State == "canceled" {
			t.Errorf("a read key's post changed the job: %s", got.State)
		}
	})
}

// TestRevokedKeyEndsSession: a session lasts only as long as its key.
func TestRevokedKeyEndsSession(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		k := d.key("temp", api.ScopeAdmin)
		b := d.browser()
		b.login(k.Key)
		if p := b.get("/ui/jobs"); p.status != http.StatusOK {
			t.Fatalf("GET /ui/jobs: %d", p.status)
		}
		if err := d.api.RevokeKey(context.Background(), k.ID); err != nil {
			t.Fatal(err)
		}
		if p := b.get("/ui/jobs"); p.status != http.StatusSeeOther {
			t.Fatalf("GET /ui/jobs after the key was revoked: %d, want a redirect to the login", p.status)
		}
	})
}

// TestForgedCookies: a session of the admin secret begun on a node of
// another secret, or a changed cookie, is no session; a node of the same
// secret and database accepts it.
func TestForgedCookies(t *testing.T) {
	st := openStore(t, "sqlite")
	other := newDash(t, st, dashOptions{Secret: "another-admin-secret"})
	ob := other.browser()
	ob.login("another-admin-secret")
	var stolen *http.Cookie
	for _, c := range ob.hc.Jar.Cookies(mustURL(t, other.URL+"/ui/")) {
		if c.Name == "jobd_session" {
			stolen = c
		}
	}
	if stolen == nil {
		t.Fatal("no session cookie")
	}
	d := newDash(t, st, dashOptions{Secret: secret})
	for _, value := range []string{stolen.Value, stolen.Value[:len(stolen.Value)-2] + "AA", "garbage", ""} {
		req, _ := http.NewRequest("GET", d.URL+"/ui/jobs", nil)
		req.AddCookie(&http.Cookie{Name: "jobd_session", Value: value})
		resp, err := d.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Request.URL.Path != "/ui/login" {
			t.Errorf("cookie %q: ended at %s, want the login page", value, resp.Request.URL.Path)
		}
	}
	// The same secret on another node accepts the session.
	d2 := newDash(t, st, dashOptions{Secret: "another-admin-secret"})
	req, _ := http.NewRequest("GET", d2.URL+"/ui/jobs", nil)
	req.AddCookie(&http.Cookie{Name: "jobd_session", Value: stolen.Value})
	resp, err := d2.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/ui/jobs" || resp.StatusCode != http.StatusOK {
		t.Errorf("a session on another node of the same secret: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
}

// TestCSRF: a state-changing post is refused 403 when it comes from
// another origin (Origin, Sec-Fetch-Site) or without the session's
// token, before it changes anything.
func TestCSRF(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		for _, sec := range []string{"", secret} {
			d := newDash(t, st, dashOptions{Secret: sec})
			b := d.browser()
			if sec != "" {
				b.login(sec)
			}
			tok := b.token("/ui/")
			other := d.browser()
			if sec != "" {
				other.login(sec)
			}
			otherTok := other.token("/ui/")
			cases := []struct {
				name string
				form url.Values
				hdr  []string
			}{
				{"no token", url.Values{}, nil},
				{"a wrong token", url.Values{"csrf": {"AAAA"}}, nil},
				{"another session's token", url.Values{"csrf": {otherTok}}, nil},
				{"another origin", url.Values{"csrf": {tok}}, []string{"Origin: https://evil.example", "Sec-Fetch-Site: "}},
				{"a cross-site fetch", url.Values{"csrf": {tok}}, []string{"Sec-Fetch-Site: cross-site", "Origin: "}},
				{"a same-site fetch", url.Values{"csrf": {tok}}, []string{"Sec-Fetch-Site: same-site"}},
				{"a null origin", url.Values{"csrf": {tok}}, []string{"Origin: null"}},
			}
			for _, c := range cases {
				if p := b.post("/ui/queues/default/pause", c.form, c.hdr...); p.status != http.StatusForbidden {
					t.Errorf("secret %q, %s: %d, want 403", sec, c.name, p.status)
				}
			}
			// The login form too (login CSRF).
			if p := b.post("/ui/login", url.Values{"key": {secret}}, "Origin: https://evil.example"); p.status != http.StatusForbidden {
				t.Errorf("secret %q: a cross-origin login: %d, want 403", sec, p.status)
			}
			qs, err := st.QueueList(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range qs {
				if q.Paused {
					t.Fatalf("a refused post paused queue %s", q.Name)
				}
			}
			// A plain client (no Origin, no Sec-Fetch-Site) with the token
			// is a page's form: it passes.
			if p := b.post("/ui/queues/default/pause", url.Values{"csrf": {tok}}, "Origin: ", "Sec-Fetch-Site: "); p.status != http.StatusSeeOther {
				t.Errorf("secret %q: the page's own form: %d", sec, p.status)
			}
			if p := b.post("/ui/queues/default/resume", url.Values{"csrf": {tok}}); p.status != http.StatusSeeOther {
				t.Errorf("secret %q: resume: %d", sec, p.status)
			}
		}
	})
}
