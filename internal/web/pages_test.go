package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// TestOverview: each queue with its active counts, its jobs finished in
// the window and its chart; the summary the page refreshes from says
// the same; the pages carry the security headers and read without the
// script.
func TestOverview(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Engine: true, HealthInterval: 10 * time.Millisecond})
		ctx := context.Background()
		for i := 0; i < 3; i++ {
			j := d.submit(api.SubmitRequest{Kind: "noop"})
			if _, err := d.api.Wait(ctx, j.ID, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 2; i++ {
			d.submit(api.SubmitRequest{Kind: "noop", Queue: "later", RunAt: ptr(time.Now().Add(time.Hour))})
		}
		d.submit(api.SubmitRequest{Kind: "noop", Queue: "later"})
		if _, err := d.api.PauseQueue(ctx, "later"); err != nil {
			t.Fatal(err)
		}
		d.waitSnapshot()

		b := d.browser()
		p := b.get("/ui/")
		if p.status != http.StatusOK {
			t.Fatalf("GET /ui/: %d", p.status)
		}
		for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"} {
			if p.header.Get(h) == "" {
				t.Errorf("no %s header", h)
			}
		}
		row := func(name string) string {
			i := strings.Index(p.body, `<tr data-queue="`+name+`"`)
			if i < 0 {
				t.Fatalf("no row for queue %s\n%s", name, p.body)
			}
			return p.body[i : i+strings.Index(p.body[i:], "</tr>")]
		}
		field := func(r, f string) string {
			i := strings.Index(r, `data-field="`+f+`">`)
			if i < 0 {
				t.Fatalf("no field %s in %s", f, r)
			}
			rest := r[i+len(`data-field="`+f+`">`):]
			return rest[:strings.Index(rest, "<")]
		}
		def, later := row("default"), row("later")
		if got := field(def, "succeeded"); got != "3" {
			t.Errorf("default succeeded: %s, want 3", got)
		}
		if !strings.Contains(def, `<svg class="chart"`) || !strings.Contains(def, `class="ok"`) {
			t.Errorf("default has no chart with a bar: %s", def)
		}
		if got := field(later, "queued"); got != "3" {
			t.Errorf("later queued: %s, want 3", got)
		}
		if got := field(later, "scheduled"); got != "2" {
			t.Errorf("later scheduled: %s, want 2", got)
		}
		if !strings.Contains(later, `data-paused="true"`) || !strings.Contains(later, `data-action="resume"`) {
			t.Errorf("later is not shown paused with a resume button: %s", later)
		}
		if !strings.Contains(p.body, `data-field="leading"`) {
			t.Errorf("the overview does not say whether the node leads")
		}

		sum := b.summary()
		queues, _ := sum["queues"].([]any)
		if len(queues) != 2 {
			t.Fatalf("summary queues: %v", sum)
		}
		q := queues[1].(map[string]any)
		if q["name"] != "later" || q["paused"] != true || q["queued"] != float64(3) {
			t.Errorf("summary of later: %v", q)
		}
		for _, path := range []string{"/ui/static/app.css", "/ui/static/app.js"} {
			if p := b.get(path); p.status != http.StatusOK || len(p.body) < 100 {
				t.Errorf("GET %s: %d", path, p.status)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestJobPage: a job's facts, args, result, per-item progress and
// journal; its items fragment; its stream under the session.
func TestJobPage(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret, Engine: true})
		ctx := context.Background()
		j := d.submit(api.SubmitRequest{Kind: "sleep", Args: json.RawMessage(`{"ms":1,"steps":1,"result":{"frames":1200}}`),
			IdempotencyKey: "clip-42", LockKey: "clip"})
		if _, err := d.api.Wait(ctx, j.ID, nil); err != nil {
			t.Fatal(err)
		}
		b := d.browser()
		b.login(secret)
		page := "/ui/jobs/" + j.ID.String()
		p := b.get(page)
		if p.status != http.StatusOK {
			t.Fatalf("GET %s: %d", page, p.status)
		}
		for _, want := range []string{"succeeded", "clip-42", `&#34;frames&#34;: 1200`, `&#34;ms&#34;: 1`, "sleeping", `<time datetime="`,
			`id="journal"`, ">succeeded</span>", ">claimed</span>", "attempt <b id=\"job-attempt\">1</b> of 5"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the job page lacks %s", want)
			}
		}
		if strings.Contains(p.body, "data-stream=") {
			t.Errorf("a finished job's page follows its stream")
		}
		if p := b.get("/ui/jobs/" + uuid.NewString()); p.status != http.StatusNotFound {
			t.Errorf("GET an unknown job: %d", p.status)
		}
		if p := b.get("/ui/jobs/nope"); p.status != http.StatusNotFound {
			t.Errorf("GET /ui/jobs/nope: %d", p.status)
		}

		// A job's steps, with their timings.
		sj := d.submit(api.SubmitRequest{Kind: "stepped", Queue: "steps"})
		claimed, err := st.JobClaim(ctx, store.ClaimParams{Queue: "steps", Max: 1, Owner: "t"})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v", err)
		}
		if _, err := st.JobStep(ctx, store.LeaseOf(claimed[0]), store.StepParams{Name: "upload", Result: json.RawMessage(`{"url":"s3://b/k"}`)}); err != nil {
			t.Fatal(err)
		}
		p = b.get("/ui/jobs/" + sj.ID.String())
		for _, want := range []string{`id="steps"`, "<td>upload</td>", "s3://b/k"} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the page of a job with a step lacks %s", want)
			}
		}
		if p := b.get(page); strings.Contains(p.body, `id="steps"`) {
			t.Errorf("the page of a job without steps shows a steps table")
		}

		// The stream of a finished job: its one event, under the session.
		p = b.get(page + "/stream")
		if p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "text/event-stream") ||
			!strings.Contains(p.body, "event: job") || !strings.Contains(p.body, `"state":"succeeded"`) {
			t.Errorf("GET %s/stream: %d %s %q", page, p.status, p.header.Get("Content-Type"), p.body)
		}
	})
}

// TestItemRows: per-item progress as the transcoding source reports it
// (an object of qualities, each with done and total) becomes rows, in
// natural order, on the page and in its fragment.
func TestItemRows(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{})
		ctx := context.Background()
		j := d.submit(api.SubmitRequest{Kind: "transcode", Queue: "video"})
		claimed, err := st.JobClaim(ctx, store.ClaimParams{Queue: "video", Max: 1, Owner: "test"})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v %d", err, len(claimed))
		}
		items := json.RawMessage(`{"1080p":{"done":30,"total":120,"state":"encoding"},"480p":{"done":120,"total":120,"state":"done"},"720p":{"percent":50}}`)
		if _, err := st.JobSetProgress(ctx, store.Lease{ID: j.ID, Token: claimed[0].LeaseToken},
			job.Progress{Phase: "encoding", Done: 1, Total: 3, Items: items}); err != nil {
			t.Fatal(err)
		}
		b := d.browser()
		for _, path := range []string{"/ui/jobs/" + j.ID.String(), "/ui/jobs/" + j.ID.String() + "/items"} {
			p := b.get(path)
			i480, i720, i1080 := strings.Index(p.body, `data-item="480p"`), strings.Index(p.body, `data-item="720p"`), strings.Index(p.body, `data-item="1080p"`)
			if p.status != http.StatusOK || i480 < 0 || !(i480 < i720 && i720 < i1080) {
				t.Fatalf("GET %s: %d, item rows at %d %d %d\n%s", path, p.status, i480, i720, i1080, p.body)
			}
			if !strings.Contains(p.body, `<progress value="30" max="120">`) || !strings.Contains(p.body, "25%") || !strings.Contains(p.body, "50%") {
				t.Errorf("GET %s: the rows' progress is wrong\n%s", path, p.body)
			}
		}
		p := b.get("/ui/jobs/" + j.ID.String())
		if !strings.Contains(p.body, `data-stream="/ui/jobs/`+j.ID.String()+`/stream"`) || !strings.Contains(p.body, `id="progress-bar" value="1" max="3"`) {
			t.Errorf("a running job's page does not follow its stream or shows a wrong bar\n%s", p.body)
		}
		if !strings.Contains(p.body, `id="lease-owner">test<`) {
			t.Errorf("the lease owner is not shown")
		}
	})
}

// orders is a processor: init and call save their args as the aux
// state, a call with {"fail":true} fails (the process goes in error),
// and repair mends it.
func orders(_ context.Context, req *process.Request) (*process.Response, error) {
	var args struct {
		Fail bool `json:"fail"`
	}
	if json.Unmarshal(req.Args, &args) == nil && args.Fail {
		return nil, errors.New("the warehouse said no")
	}
	aux := req.Args
	if req.Task == process.TaskRepair {
		aux = json.RawMessage(`{"repaired":true}`)
	}
	return &process.Response{AuxState: aux, Events: []json.RawMessage{json.RawMessage(`{"task":"` + string(req.Task) + `"}`)}}, nil
}

// TestProcesses: a namespace's processes filtered by status, a process's
// aux state and history, and repair of one in error.
func TestProcesses(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret, Processor: process.ProcessorFunc(orders)})
		call := func(path, body string) int {
			req, _ := http.NewRequest("POST", d.URL+"/api/v1/processes/orders/"+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		for _, id := range []string{"o-1", "o-2"} {
			if code := call(id+"?timeout=30s", `{"args":{"sku":"`+id+`"}}`); code != http.StatusCreated && code != http.StatusOK {
				t.Fatalf("init %s: %d", id, code)
			}
		}
		if code := call("o-2/call?timeout=30s", `{"args":{"fail":true}}`); code != http.StatusBadGateway {
			t.Fatalf("a failing call: %d, want 502", code)
		}
		b := d.browser()
		b.login(secret)
		p := b.get("/ui/processes")
		if !strings.Contains(p.body, `data-process="o-1"`) || !strings.Contains(p.body, `data-process="o-2"`) {
			t.Fatalf("the processes page lacks a process\n%s", p.body)
		}
		p = b.get("/ui/processes?ns=orders&status=error")
		if strings.Contains(p.body, `data-process="o-1"`) || !strings.Contains(p.body, `data-process="o-2"`) || !strings.Contains(p.body, "1 process in orders") {
			t.Fatalf("the processes in error\n%s", p.body)
		}
		for _, bad := range []string{"/ui/processes?ns=nope", "/ui/processes/nope/o-1", "/ui/processes/orders/o-9"} {
			if p := b.get(bad); p.status != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", bad, p.status)
			}
		}
		if p := b.get("/ui/processes?ns=orders&status=zombie"); p.status != http.StatusBadRequest {
			t.Errorf("a bad status: %d", p.status)
		}
		page := "/ui/processes/orders/o-2"
		p = b.get(page)
		for _, want := range []string{"the warehouse said no", `id="repair"`, `&#34;sku&#34;: &#34;o-2&#34;`, `&#34;task&#34;: &#34;init&#34;`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the process page lacks %s\n%s", want, p.body)
			}
		}
		p = b.act(page, page+"/repair", nil)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location(), page+"?msg=") {
			t.Fatalf("repair: %d to %q", p.status, p.location())
		}
		// The repair task runs on the engine; its job's long-poll says when.
		msg, _ := url.ParseQuery(strings.SplitN(p.location(), "?", 2)[1])
		taskID := strings.Fields(msg.Get("msg"))[2]
		if _, err := d.api.Wait(context.Background(), mustUUID(t, taskID), nil); err != nil {
			t.Fatal(err)
		}
		got, err := st.ProcessGet(context.Background(), "orders", "o-2", store.HistoryPage{})
		if err != nil || got.Status != store.ProcessRunning {
			t.Fatalf("after the repair: %v %v", got, err)
		}
		if p := b.get(page); strings.Contains(p.body, `id="repair"`) || !strings.Contains(p.body, "repaired") {
			t.Errorf("the repaired process's page\n%s", p.body)
		}
	})
}

// TestAsync: pending and done requests; viewing them consumes nothing;
// delete removes a result.
func TestAsync(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		release := make(chan struct{})
		upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}
			io.WriteString(w, "report "+r.URL.Path)
		}))
		defer upstream.Close()
		defer close(release)
		u, _ := url.Parse(upstream.URL)
		d := newDash(t, st, dashOptions{Upstream: u})
		send := func(path string) string {
			req, _ := http.NewRequest("GET", d.URL+"/gw/reports"+path, nil)
			req.Header.Set("X-Async", "store")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.Header.Get("X-Async-Id")
		}
		done, slow := send("/june"), send("/slow")
		if _, err := d.api.Wait(context.Background(), mustUUID(t, done), nil); err != nil {
			t.Fatal(err)
		}
		b := d.browser()
		p := b.get("/ui/async")
		if !strings.Contains(p.body, `data-request="`+slow+`"`) || strings.Contains(p.body, `data-request="`+done+`"`) {
			t.Fatalf("pending view\n%s", p.body)
		}
		for i := 0; i < 2; i++ {
			p = b.get("/ui/async?view=done")
			if !strings.Contains(p.body, `data-request="`+done+`"`) || !strings.Contains(p.body, "/june") || !strings.Contains(p.body, ">200<") {
				t.Fatalf("done view (read %d)\n%s", i, p.body)
			}
		}
		// Viewing consumed nothing: the result is still there to fetch.
		resp, err := http.Get(d.URL + "/api/v1/async/" + done)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the result after viewing: %d, want 200", resp.StatusCode)
		}
		if p := b.act("/ui/async?view=done", "/ui/async/"+slow+"/delete", nil); p.status != http.StatusConflict {
			t.Errorf("delete of a pending request: %d, want 409", p.status)
		}
		if p := b.act("/ui/async?view=done", "/ui/async/"+done+"/delete", nil); p.status != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.status)
		}
		resp, err = http.Get(d.URL + "/api/v1/async/" + done)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("the result after delete: %d, want 404", resp.StatusCode)
		}
	})
}

// TestNotConfigured: without processes or a gateway their pages say so.
func TestNotConfigured(t *testing.T) {
	d := newDash(t, openStore(t, "sqlite"), dashOptions{})
	b := d.browser()
	if p := b.get("/ui/processes"); p.status != http.StatusOK || !strings.Contains(p.body, "--processors") {
		t.Errorf("processes: %d", p.status)
	}
	if p := b.get("/ui/async"); p.status != http.StatusOK || !strings.Contains(p.body, "--upstream") {
		t.Errorf("async: %d", p.status)
	}
	if p := b.act("/ui/", "/ui/async/"+uuid.NewString()+"/delete", nil); p.status != http.StatusNotFound {
		t.Errorf("async delete: %d", p.status)
	}
}
