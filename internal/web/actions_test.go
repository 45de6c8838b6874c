package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestJobActions: cancel and retry from a job's page, and bulk cancel
// and retry from the list, do what the API's routes do; a refused one
// says why and changes nothing.
func TestJobActions(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		b := d.browser()
		b.login(secret)

		j := d.submit(api.SubmitRequest{Kind: "noop", Queue: "idle"})
		page := "/ui/jobs/" + j.ID.String()
		p := b.get(page)
		if !strings.Contains(p.body, `id="cancel"`) || strings.Contains(p.body, `id="retry"`) {
			t.Fatalf("a queued job's page: want a cancel button and no retry\n%s", p.body)
		}
		p = b.act(page, page+"/cancel", nil)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location(), page+"?msg=") {
			t.Fatalf("cancel: %d to %q", p.status, p.location())
		}
		if got := d.job(j.ID.String()); got.State != job.StateCanceled {
			t.Fatalf("after cancel: %s", got.State)
		}
		p = b.get(p.location())
		if !strings.Contains(p.body, "Job canceled.") || !strings.Contains(p.body, `id="retry"`) || strings.Contains(p.body, `id="cancel"`) {
			t.Fatalf("a canceled job's page: want the message, a retry button and no cancel\n%s", p.body)
		}
		if p := b.act(page, page+"/cancel", nil); p.status != http.StatusConflict {
			t.Fatalf("cancel of a canceled job: %d, want 409", p.status)
		}
		if p := b.act(page, page+"/retry", nil); p.status != http.StatusSeeOther {
			t.Fatalf("retry: %d", p.status)
		}
		if got := d.job(j.ID.String()); got.State != job.StateQueued {
			t.Fatalf("after retry: %s", got.State)
		}
		if p := b.act(page, "/ui/jobs/00000000-0000-0000-0000-000000000000/cancel", nil); p.status != http.StatusNotFound {
			t.Fatalf("cancel of no job: %d", p.status)
		}

		// Bulk: three queued jobs and one canceled one.
		var ids []string
		for i := 0; i < 3; i++ {
			ids = append(ids, d.submit(api.SubmitRequest{Kind: "noop", Queue: "idle"}).ID.String())
		}
		form := url.Values{"action": {"cancel"}, "id": append([]string{j.ID.String()}, ids...), "back": {"/ui/jobs?queue=idle"}}
		p = b.act("/ui/jobs", "/ui/jobs/bulk", form)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location(), "/ui/jobs?") {
			t.Fatalf("bulk cancel: %d to %q", p.status, p.location())
		}
		msg, _ := url.ParseQuery(strings.SplitN(p.location(), "?", 2)[1])
		if msg.Get("queue") != "idle" || msg.Get("msg") != "cancel: 4 jobs done." {
			t.Errorf("bulk cancel went to %q", p.location())
		}
		form.Set("action", "retry")
		form.Add("id", d.submit(api.SubmitRequest{Kind: "noop", Queue: "idle"}).ID.String())
		p = b.act("/ui/jobs", "/ui/jobs/bulk", form)
		msg, _ = url.ParseQuery(strings.SplitN(p.location(), "?", 2)[1])
		if msg.Get("msg") != "retry: 4 jobs done, 1 job refused (not in a state that allows it)." {
			t.Errorf("bulk retry: %q", msg.Get("msg"))
		}
		for _, id := range append(ids, j.ID.String()) {
			if got := d.job(id); got.State != job.StateQueued {
				t.Errorf("job %s after the bulk retry: %s", id, got.State)
			}
		}
		if p := b.act("/ui/jobs", "/ui/jobs/bulk", url.Values{"action": {"delete"}, "id": ids}); p.status != http.StatusBadRequest {
			t.Errorf("bulk delete: %d, want 400", p.status)
		}
		// back is a path of the dashboard, never another site.
		p = b.act("/ui/jobs", "/ui/jobs/bulk", url.Values{"action": {"cancel"}, "back": {"https://evil.example/ui/"}})
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location(), "/ui/") {
			t.Errorf("bulk with an outside back: %d to %q", p.status, p.location())
		}
	})
}

// TestQueueActions: pause and resume from the overview, for a queue
// whose name needs escaping too.
func TestQueueActions(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{HealthInterval: 10 * time.Millisecond})
		b := d.browser()
		name := "reports/eu west?#"
		d.submit(api.SubmitRequest{Kind: "noop", Queue: name})
		d.waitSnapshot()
		p := b.get("/ui/")
		action := "/ui/queues/" + url.PathEscape(name) + "/pause"
		if !strings.Contains(p.body, `action="`+strings.ReplaceAll(action, "%3F", "%3F")+`"`) {
			t.Fatalf("the overview has no pause form for %q (%s)\n%s", name, action, p.body)
		}
		if p := b.act("/ui/", action, nil); p.status != http.StatusSeeOther {
			t.Fatalf("pause: %d %s", p.status, p.body)
		}
		paused := func() bool {
			qs, err := st.QueueList(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range qs {
				if q.Name == name {
					return q.Paused
				}
			}
			t.Fatalf("no queue %q", name)
			return false
		}
		if !paused() {
			t.Fatal("the queue is not paused")
		}
		if p := b.get("/ui/"); !strings.Contains(p.body, `data-action="resume"`) {
			t.Fatal("a paused queue's row has no resume button")
		}
		if p := b.act("/ui/", "/ui/queues/"+url.PathEscape(name)+"/resume", nil); p.status != http.StatusSeeOther {
			t.Fatalf("resume: %d", p.status)
		}
		if paused() {
			t.Fatal("the queue is still paused")
		}
		long := strings.Repeat("q", 129)
		if p := b.act("/ui/", "/ui/queues/"+long+"/pause", nil); p.status != http.StatusBadRequest {
			t.Fatalf("pause of a queue no job could have: %d", p.status)
		}
	})
}

// TestWorkerActions: disable, enable and delete a remote worker.
func TestWorkerActions(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		ctx := context.Background()
		w, err := d.api.CreateWorker(ctx, api.WorkerRequest{Name: "gpu-1", Capabilities: []string{"gpu", "h264"},
			Metadata: json.RawMessage(`{"region":"eu-west"}`)})
		if err != nil {
			t.Fatal(err)
		}
		b := d.browser()
		b.login(secret)
		p := b.get("/ui/workers")
		for _, want := range []string{"gpu-1", "h264", "eu-west", `data-action="disable"`, `data-action="delete"`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the workers page lacks %q", want)
			}
		}
		base := "/ui/workers/" + w.Worker.ID
		if p := b.act("/ui/workers", base+"/disable", nil); p.status != http.StatusSeeOther {
			t.Fatalf("disable: %d", p.status)
		}
		if x, _ := st.WorkerGet(ctx, w.Worker.ID); !x.Disabled {
			t.Fatal("not disabled")
		}
		if p := b.act("/ui/workers", base+"/enable", nil); p.status != http.StatusSeeOther {
			t.Fatalf("enable: %d", p.status)
		}
		if x, _ := st.WorkerGet(ctx, w.Worker.ID); x.Disabled {
			t.Fatal("still disabled")
		}
		if p := b.act("/ui/workers", base+"/delete", nil); p.status != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.status)
		}
		if _, err := st.WorkerGet(ctx, w.Worker.ID); err == nil {
			t.Fatal("the worker is still there")
		}
		// Its key is revoked with it.
		wc, err := client.New(d.URL, w.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wc.WorkerHeartbeat(ctx, "", nil); !errors.Is(err, client.ErrUnauthorized) {
			t.Fatalf("the deleted worker's heartbeat: %v, want unauthorized", err)
		}
		if p := b.act("/ui/workers", base+"/delete", nil); p.status != http.StatusNotFound {
			t.Fatalf("delete again: %d, want 404", p.status)
		}
	})
}

// TestJobsList: newest first, 50 a page, by cursor; the filters and the
// search by id or idempotency key.
func TestJobsList(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{})
		b := d.browser()
		var ids []string
		for i := 0; i < 120; i++ {
			req := api.SubmitRequest{Kind: "noop", Queue: "q1", PartitionKey: fmt.Sprint("p", i%2)}
			if i == 7 {
				req.Kind, req.IdempotencyKey, req.LockKey = "special", "order-7", "lock-7"
			}
			ids = append(ids, d.submit(req).ID.String())
		}
		rows := func(p *page) []string {
			var out []string
			for _, part := range strings.Split(p.body, `<tr data-job="`)[1:] {
				out = append(out, part[:36])
			}
			return out
		}
		next := func(p *page) string {
			i := strings.Index(p.body, `rel="next" id="next"`)
			if i < 0 {
				return ""
			}
			start := strings.LastIndex(p.body[:i], `href="`) + len(`href="`)
			return strings.ReplaceAll(p.body[start:strings.Index(p.body[start:], `"`)+start], "&amp;", "&")
		}
		var seen []string
		path := "/ui/jobs?queue=q1"
		for pages := 0; path != ""; pages++ {
			if pages > 3 {
				t.Fatal("too many pages")
			}
			p := b.get(path)
			if p.status != http.StatusOK {
				t.Fatalf("GET %s: %d", path, p.status)
			}
			seen = append(seen, rows(p)...)
			path = next(p)
			if path != "" && !strings.Contains(path, "queue=q1") {
				t.Fatalf("the next page's link lost the filter: %s", path)
			}
		}
		if len(seen) != 120 {
			t.Fatalf("%d jobs over the pages, want 120", len(seen))
		}
		for i, id := range seen {
			if id != ids[119-i] {
				t.Fatalf("row %d is %s, want %s (newest first)", i, id, ids[119-i])
			}
		}
		for _, c := range []struct {
			query string
			want  int
		}{
			{"kind=special", 1}, {"lock_key=lock-7", 1}, {"partition_key=p1", 50}, {"state=running", 0},
			{"q=order-7", 1}, {"q=" + ids[3], 1}, {"q=" + "0190c0de-0000-7000-8000-000000000000", 0},
			{"queue=other", 0},
		} {
			p := b.get("/ui/jobs?" + c.query)
			if p.status != http.StatusOK || len(rows(p)) != c.want {
				t.Errorf("GET /ui/jobs?%s: %d with %d rows, want %d", c.query, p.status, len(rows(p)), c.want)
			}
		}
		if got := rows(b.get("/ui/jobs?q=" + ids[3])); len(got) == 1 && got[0] != ids[3] {
			t.Errorf("search by id found %s", got[0])
		}
		for _, bad := range []string{"state=lost", "after=nope", "kind=%00"} {
			if p := b.get("/ui/jobs?" + bad); p.status != http.StatusBadRequest {
				t.Errorf("GET /ui/jobs?%s: %d, want 400", bad, p.status)
			}
		}
	})
}

// TestJobsListBoundedScan: a filter few jobs match looks at ScanLimit
// jobs a page; the page says so and offers to search on, and searching
// on finds every match once.
func TestJobsListBoundedScan(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{ScanLimit: 20})
		b := d.browser()
		var rare []string
		for i := 0; i < 70; i++ {
			req := api.SubmitRequest{Kind: "common"}
			if i%30 == 5 {
				req.Kind = "rare"
			}
			id := d.submit(req).ID.String()
			if req.Kind == "rare" {
				rare = append([]string{id}, rare...)
			}
		}
		var found []string
		path := "/ui/jobs?kind=rare"
		for pages := 0; path != ""; pages++ {
			if pages > 10 {
				t.Fatal("the search does not end")
			}
			p := b.get(path)
			for _, part := range strings.Split(p.body, `<tr data-job="`)[1:] {
				found = append(found, part[:36])
			}
			path = ""
			if i := strings.Index(p.body, `rel="next" id="next">`); i >= 0 {
				if !strings.Contains(p.body, `id="scanned"`) || !strings.Contains(p.body, "Search older jobs") {
					t.Fatalf("a page that ended its scan does not say so\n%s", p.body)
				}
				start := strings.LastIndex(p.body[:i], `href="`) + len(`href="`)
				path = strings.ReplaceAll(p.body[start:start+strings.Index(p.body[start:], `"`)], "&amp;", "&")
			}
		}
		if strings.Join(found, ",") != strings.Join(rare, ",") {
			t.Fatalf("found %v, want %v", found, rare)
		}
	})
}
