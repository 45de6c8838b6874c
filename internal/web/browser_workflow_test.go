package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestBrowserWorkflow drives a workflow's page in a real headless
// Chromium, on each store: a diamond (download → encode-720p and
// encode-1080p → publish) drawn with its nodes in columns, whose colours
// change without a reload as its tasks run and end; the page reloads
// itself once the workflow ends; a node leads to its task's page, which
// leads back; the page fits 375 px. With JOBD_UI_SCREENSHOTS=DIR it
// writes the screenshot of docs/dashboard.md there.
func TestBrowserWorkflow(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser tests (real Chromium) run without -short")
	}
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) { browserWorkflow(t, openStore(t, driver), driver == "sqlite") })
	}
}

func browserWorkflow(t *testing.T, st store.Store, screenshots bool) {
	shots := ""
	if screenshots {
		shots = os.Getenv("JOBD_UI_SCREENSHOTS")
	}
	d := newDash(t, st, dashOptions{Secret: secret})
	task := func(ref string, deps ...string) job.TaskParams {
		return job.TaskParams{Ref: ref, DependsOn: deps, InsertParams: job.InsertParams{Queue: wfQueue, Kind: "transcode"}}
	}
	id, tasks := submitWorkflow(t, st, "transcode", task("download"), task("encode-720p", "download"),
		task("encode-1080p", "download"), task("publish", "encode-720p", "encode-1080p"))
	ctx := context.Background()
	// claim claims one queued task; finish ends it succeeded.
	claim := func() *job.Job {
		t.Helper()
		js, err := st.JobClaim(ctx, store.ClaimParams{Queue: wfQueue, Max: 1, Owner: "gpu-1"})
		if err != nil || len(js) != 1 {
			t.Fatalf("claim: %v %v", js, err)
		}
		return js[0]
	}
	finish := func(j *job.Job) {
		t.Helper()
		res, err := st.JobFinish(ctx, []store.Outcome{{Lease: store.LeaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{}`)}}})
		if err != nil || res[0].Lost {
			t.Fatalf("finish %s: %v %+v", j.Ref, err, res)
		}
	}

	b := newTab(t)
	page := d.URL + "/ui/workflows/" + id.String()
	b.open(page)
	b.do(chromedp.SendKeys(chromedp.ID("key"), secret))
	if status := b.click("#login"); status != http.StatusOK {
		t.Fatalf("login: %d", status)
	}
	b.open(page)
	node := func(ref string) string { return fmt.Sprintf(`document.querySelector('g.node[data-ref="%s"]')`, ref) }
	state := func(ref string) string { return node(ref) + `.getAttribute('class')` }
	fill := func(ref string) string {
		return js[string](b, `getComputedStyle(`+node(ref)+`.querySelector('rect')).fill`)
	}
	b.waitFor("the graph", `document.querySelectorAll('svg.workflow g.node').length === 4`)
	for ref, want := range map[string]string{"download": "node s-queued", "encode-720p": "node s-waiting", "publish": "node s-waiting"} {
		if got := js[string](b, state(ref)); got != want {
			t.Errorf("%s: class %q, want %q", ref, got, want)
		}
	}
	// Columns by depth, left to right.
	xs := js[[]float64](b, `['download', 'encode-720p', 'encode-1080p', 'publish'].map(r => `+
		`document.querySelector('g.node[data-ref="' + r + '"]').getBoundingClientRect().x)`)
	if !(xs[0] < xs[1] && xs[1] == xs[2] && xs[2] < xs[3]) {
		t.Errorf("the nodes' x: %v, want download < encode-720p = encode-1080p < publish", xs)
	}
	if n := js[int](b, `document.querySelectorAll('svg.workflow path.edge').length`); n != 4 {
		t.Errorf("%d arrows, want 4", n)
	}
	waiting, queued := fill("publish"), fill("download")
	if waiting == queued {
		t.Errorf("a waiting and a queued task have the same colour %s", waiting)
	}

	// The colours follow the tasks without a reload.
	js[bool](b, "window.sameDocument = true")
	dl := claim()
	b.waitFor("download to run", state("download")+` === 'node s-running'`)
	running := fill("download")
	finish(dl)
	b.waitFor("download to succeed and the encodes to be released",
		state("download")+` === 'node s-succeeded' && `+state("encode-720p")+` === 'node s-queued' && `+state("encode-1080p")+` === 'node s-queued'`)
	succeeded := fill("download")
	if len(map[string]bool{waiting: true, queued: true, running: true, succeeded: true}) != 4 {
		t.Errorf("colours waiting %s, queued %s, running %s, succeeded %s: want four", waiting, queued, running, succeeded)
	}
	if got := b.text(`[data-count="succeeded"]`); got != "1" {
		t.Errorf("succeeded count: %q", got)
	}
	if got := b.text(fmt.Sprintf(`#tasks tr[data-task="%s"] .badge`, tasks["encode-720p"].ID)); got != "queued" {
		t.Errorf("the task list's encode-720p: %q, want queued", got)
	}
	first := claim()
	b.waitFor("an encode to run", state(first.Ref)+` === 'node s-running'`)
	b.screenshot(shots, "dashboard-workflow.png")
	finish(first)
	finish(claim())
	b.waitFor("publish to be released", state("publish")+` === 'node s-queued'`)
	if !js[bool](b, "window.sameDocument === true") {
		t.Fatal("the page reloaded to show the tasks' states")
	}
	// The workflow's end reloads the page: its state, no cancel button.
	finish(claim())
	b.waitFor("the workflow to succeed", `(document.getElementById('workflow-state') || {}).textContent === 'succeeded'`)
	if js[bool](b, "window.sameDocument === true") || js[bool](b, `document.getElementById('cancel') !== null`) {
		t.Errorf("the ended workflow's page was not reloaded, or offers a cancel")
	}

	// A node leads to its task's page, which leads back.
	b.click(`g.node[data-ref="publish"]`)
	b.waitFor("publish's page", fmt.Sprintf(`location.pathname === '/ui/jobs/%s'`, tasks["publish"].ID))
	if got := b.text("#task-ref"); got != "publish" {
		t.Errorf("the task's ref: %q", got)
	}
	b.click("#workflow-link")
	b.waitFor("the workflow's page", fmt.Sprintf(`location.pathname === '/ui/workflows/%s'`, id))

	// 375 px wide: the graph scrolls in its box.
	b.do(chromedp.EmulateViewport(375, 800, chromedp.EmulateMobile))
	for _, path := range []string{"/ui/workflows", "/ui/workflows/" + id.String()} {
		b.open(d.URL + path)
		if w := js[int](b, "document.documentElement.scrollWidth"); w > 375 {
			t.Errorf("%s at 375 px is %d px wide", path, w)
		}
	}
	b.do(chromedp.EmulateReset())
}
