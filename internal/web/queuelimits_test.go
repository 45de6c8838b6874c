package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/store"
)

// TestWorkersPageShowsQueues: the workers page shows the queues each
// worker may claim from, and "any" for a worker registered without.
func TestWorkersPageShowsQueues(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		ctx := context.Background()
		limited, err := d.api.CreateWorker(ctx, api.WorkerRequest{Name: "video box", Queues: []string{"video.*", "thumbs"}})
		if err != nil {
			t.Fatal(err)
		}
		open, err := d.api.CreateWorker(ctx, api.WorkerRequest{Name: "any box"})
		if err != nil {
			t.Fatal(err)
		}
		b := d.browser()
		b.login(secret)
		p := b.get("/ui/workers")
		if p.status != http.StatusOK {
			t.Fatalf("GET /ui/workers: %d", p.status)
		}
		row := func(id string) string {
			m := regexp.MustCompile(`(?s)<tr data-worker="` + id + `">.*?</tr>`).FindString(p.body)
			if m == "" {
				t.Fatalf("no row of worker %s in %s", id, p.body)
			}
			return regexp.MustCompile(`(?s)<td data-field="queues">(.*?)</td>`).FindStringSubmatch(m)[1]
		}
		if q := row(limited.WorkerID); !strings.Contains(q, ">video.*<") || !strings.Contains(q, ">thumbs<") {
			t.Errorf("the limited worker's queues cell: %q", q)
		}
		if q := row(open.WorkerID); !strings.Contains(q, "any") || strings.Contains(q, "video") {
			t.Errorf("the open worker's queues cell: %q", q)
		}
	})
}

// TestLoginRefusesQueueLimitedKey: a key limited to queues cannot log in
// to the dashboard, which shows every queue: 403, and no session.
func TestLoginRefusesQueueLimitedKey(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		k, err := d.api.CreateKeyWith(context.Background(), api.KeyRequest{Name: "video", Scopes: []string{api.ScopeRead}, Queues: []string{"video.*"}})
		if err != nil {
			t.Fatal(err)
		}
		b := d.browser()
		p := b.post("/ui/login", url.Values{"csrf": {b.token("/ui/login")}, "key": {k.Key}})
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "limited to queues") {
			t.Fatalf("login with a key limited to queues: %d\n%s", p.status, p.body)
		}
		if p := b.get("/ui/jobs"); p.status != http.StatusSeeOther {
			t.Fatalf("GET /ui/jobs after the refused login: %d, want a redirect to the login", p.status)
		}
	})
}

// TestCancelKeyCancelsInDashboard: a key of scopes read and cancel sees a
// job's Cancel button, and no other write; its cancel is carried out and
// its retry refused.
func TestCancelKeyCancelsInDashboard(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		j := d.submit(api.SubmitRequest{Kind: "noop"})
		b := d.browser()
		b.login(d.key("canceler", api.ScopeRead, api.ScopeCancel).Key)
		page := "/ui/jobs/" + j.ID.String()
		p := b.get(page)
		if !strings.Contains(p.body, `id="cancel"`) || strings.Contains(p.body, `/retry"`) || strings.Contains(p.body, `/rerun"`) {
			t.Fatalf("a read,cancel key's job page: cancel %v, retry %v, rerun %v",
				strings.Contains(p.body, `id="cancel"`), strings.Contains(p.body, `/retry"`), strings.Contains(p.body, `/rerun"`))
		}
		if p := b.act(page, page+"/cancel", nil); p.status != http.StatusSeeOther {
			t.Fatalf("POST cancel as a read,cancel key: %d\n%s", p.status, p.body)
		}
		if got := d.job(j.ID.String()); got.State != "canceled" {
			t.Fatalf("the job is %s after the cancel", got.State)
		}
		if p := b.act(page, page+"/retry", nil); p.status != http.StatusForbidden {
			t.Fatalf("POST retry as a read,cancel key: %d, want 403", p.status)
		}
	})
}
