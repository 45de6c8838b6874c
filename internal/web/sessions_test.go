package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// sessionOf is the browser's session cookie.
func (b *browser) sessionOf() string {
	b.t.Helper()
	for _, c := range b.hc.Jar.Cookies(mustURL(b.t, b.d.URL+"/ui/")) {
		if c.Name == "jobd_session" {
			return c.Value
		}
	}
	b.t.Fatal("no session cookie")
	return ""
}

// replay reads path of d with the session cookie value alone, as a
// thief replaying a stolen cookie would; it returns the status and where
// a redirect goes.
func replay(t *testing.T, d *dash, path, cookie string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", d.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: "jobd_session", Value: cookie})
	hc := *d.srv.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// TestLogoutEndsSession: a logout ends the session on the server: its
// cookie, replayed, is refused by the node that logged out and by another
// node of the same database and secret, for a session of the admin
// secret and one of a key alike; other sessions live on.
func TestLogoutEndsSession(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		other := newDash(t, st, dashOptions{Secret: secret})
		key := d.key("viewer", api.ScopeRead)
		for _, cred := range []string{secret, key.Key} {
			b, stays := d.browser(), d.browser()
			b.login(cred)
			stays.login(cred)
			cookie := b.sessionOf()
			for _, n := range []*dash{d, other} {
				if status, _ := replay(t, n, "/ui/jobs", cookie); status != http.StatusOK {
					t.Fatalf("the session before the logout: %d", status)
				}
			}
			if p := b.act("/ui/", "/ui/logout", nil); p.status != http.StatusSeeOther || p.location() != "/ui/login" {
				t.Fatalf("logout: %d to %q", p.status, p.location())
			}
			for _, n := range []*dash{d, other} {
				if status, loc := replay(t, n, "/ui/jobs", cookie); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login") {
					t.Fatalf("the logged-out cookie replayed: %d to %q, want the login page", status, loc)
				}
			}
			if p := stays.get("/ui/jobs"); p.status != http.StatusOK {
				t.Fatalf("another session of the same credential after the logout: %d", p.status)
			}
		}
	})
}

// TestSecretRotation: a session begun with the admin secret is refused by
// a node started with another secret (the secret was rotated) and
// accepted by one with the same; a key's session lives on across the
// rotation, as its key does.
func TestSecretRotation(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		old := newDash(t, st, dashOptions{Secret: secret})
		rotated := newDash(t, st, dashOptions{Secret: "the-rotated-admin-secret"})
		key := old.key("viewer", api.ScopeRead)
		admin, keyed := old.browser(), old.browser()
		admin.login(secret)
		keyed.login(key.Key)
		if status, loc := replay(t, rotated, "/ui/jobs", admin.sessionOf()); status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login") {
			t.Fatalf("the old secret's session on a node of the new one: %d to %q, want the login page", status, loc)
		}
		if status, _ := replay(t, old, "/ui/jobs", admin.sessionOf()); status != http.StatusOK {
			t.Fatalf("the session on a node of its own secret: %d", status)
		}
		if status, _ := replay(t, rotated, "/ui/jobs", keyed.sessionOf()); status != http.StatusOK {
			t.Fatalf("a key's session after the rotation: %d", status)
		}
	})
}

// TestLoginThrottled: after 5 failed logins a client waits before each
// next one (429 with Retry-After, its key not even checked: the admin
// secret too is refused), a wait that doubles with each failure; an
// X-Forwarded-For of its own choosing does not make it another client;
// once the wait has passed, a good key logs in and the failures are
// forgotten. The dashboard's clock is a fake one: nothing sleeps.
func TestLoginThrottled(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Now())
	d := newDash(t, openStore(t, "sqlite"), dashOptions{Secret: secret, Clock: clk})
	b := d.browser()
	tok := b.token("/ui/login")
	try := func(key string, hdr ...string) *page {
		t.Helper()
		return b.post("/ui/login", url.Values{"csrf": {tok}, "key": {key}}, hdr...)
	}
	for i := 1; i <= 6; i++ {
		if p := try("wrong-" + secret); p.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i, p.status)
		}
	}
	held := func(what string, p *page, retry string) {
		t.Helper()
		if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") != retry || !strings.Contains(p.body, "Too many failed logins") {
			t.Fatalf("%s: %d, Retry-After %q; want 429 with Retry-After %s and a message", what, p.status, p.header.Get("Retry-After"), retry)
		}
	}
	held("the admin secret after 6 failures", try(secret), "1")
	held("with another X-Forwarded-For", try(secret, "X-Forwarded-For: 203.0.113.77", "X-Real-Ip: 203.0.113.77"), "1")
	clk.Advance(time.Second)
	if p := try("wrong-" + secret); p.status != http.StatusUnauthorized {
		t.Fatalf("a failure once the wait passed: %d", p.status)
	}
	held("after 7 failures", try(secret), "2")
	clk.Advance(2 * time.Second)
	if p := try(secret); p.status != http.StatusSeeOther {
		t.Fatalf("the admin secret once the wait passed: %d", p.status)
	}
	// Forgotten: five failures are free again.
	b2 := d.browser()
	tok = b2.token("/ui/login")
	for i := 1; i <= 5; i++ {
		if p := b2.post("/ui/login", url.Values{"csrf": {tok}, "key": {"wrong"}}); p.status != http.StatusUnauthorized {
			t.Fatalf("failure %d after a success: %d, want 401", i, p.status)
		}
	}
}

// TestPauseShowsAtOnce: on a node whose queue health snapshot is older
// than the action (it is refreshed every few seconds), the overview and
// its summary show a queue paused, with a Resume button, right after
// Pause, and active again right after Resume.
func TestPauseShowsAtOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		if _, err := st.JobInsertMany(context.Background(), []job.InsertParams{{Queue: "emails", Kind: "render"}}); err != nil {
			t.Fatal(err)
		}
		// The node's snapshot, taken at its start, before the actions, and
		// not refreshed within the test.
		d := newDash(t, st, dashOptions{HealthInterval: time.Hour})
		d.waitMetric(`jobd_queue_paused{queue="emails"} 0`)
		b := d.browser()
		check := func(what string, paused bool) {
			t.Helper()
			p := b.get("/ui/")
			row := `data-queue="emails" data-paused="` + map[bool]string{true: "true", false: "false"}[paused] + `"`
			button := map[bool]string{true: `data-action="resume">Resume`, false: `data-action="pause">Pause`}[paused]
			if !strings.Contains(p.body, row) || !strings.Contains(p.body, button) {
				t.Fatalf("%s: the overview lacks %s and %s", what, row, button)
			}
			for _, q := range b.summary()["queues"].([]any) {
				if q := q.(map[string]any); q["name"] == "emails" && q["paused"] != paused {
					t.Fatalf("%s: the summary says paused %v", what, q["paused"])
				}
			}
		}
		check("before", false)
		if p := b.act("/ui/", "/ui/queues/emails/pause", nil); p.status != http.StatusSeeOther {
			t.Fatalf("pause: %d", p.status)
		}
		check("after Pause", true)
		if p := b.act("/ui/", "/ui/queues/emails/resume", nil); p.status != http.StatusSeeOther {
			t.Fatalf("resume: %d", p.status)
		}
		check("after Resume", false)
	})
}
