package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// tab is one tab of a headless Chromium of its own (a fresh profile).
type tab struct {
	t   *testing.T
	ctx context.Context
}

// newTab starts Chromium. A machine without it fails the test: the
// browser tests are part of the suite, not an extra.
func newTab(t *testing.T) *tab {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("the browser tests need Chromium at %s (apt-get install -y chromium; .ci/run installs it): %v", chromiumPath, err)
	}
	// The test's deadline (go test -timeout), less a margin to report a
	// wait that never ends as a failure rather than a panic.
	base, cancelBase := context.WithCancel(context.Background())
	if dl, ok := t.Deadline(); ok {
		base, cancelBase = context.WithDeadline(context.Background(), dl.Add(-30*time.Second))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 720),
		// Without these Chromium reaches for the network, which this
		// machine refuses.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-sync", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(base, opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelBase()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	// Confirm dialogs (data-confirm) are accepted.
	dialogs := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			if _, err := chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true}); err != nil {
				return
			}
		}
	}()
	return &tab{t: t, ctx: ctx}
}

// do runs steps, failing the test on an error.
func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// open loads url and returns the document's HTTP status.
func (b *tab) open(url string) int64 {
	b.t.Helper()
	resp, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(url))
	if err != nil {
		b.t.Fatalf("open %s: %v", url, err)
	}
	return resp.Status
}

// click clicks sel and waits for the page it leads to; it returns that
// page's HTTP status.
func (b *tab) click(sel string) int64 {
	b.t.Helper()
	resp, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
	return resp.Status
}

// js evaluates an expression.
func js[T any](b *tab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor waits until expr is true in the page, as long as the test may
// run: the condition is the signal, there is no timing threshold. A page
// that navigates meanwhile (the job page reloads itself when its job
// changes state) is waited on in turn.
func (b *tab) waitFor(what, expr string) {
	b.t.Helper()
	for {
		_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(0)))
		if err == nil {
			return
		}
		if b.ctx.Err() == nil && navigated(err) {
			continue
		}
		b.t.Fatalf("waiting for %s (%s): %v\npage: %s", what, expr, err, js[string](b, "document.body ? document.body.innerText : ''"))
	}
}

// navigated reports whether err is a page's script context going away
// under an evaluation, as a navigation does.
func navigated(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "navigated or closed") || strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Cannot find context")
}

// text is the text of the first element sel matches ("" for none).
func (b *tab) text(sel string) string {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	return js[string](b, fmt.Sprintf(`(document.querySelector(%s) || {textContent: ""}).textContent.trim()`, q))
}

// screenshot writes the viewport to dir/name when dir is set.
func (b *tab) screenshot(dir, name string) {
	b.t.Helper()
	if dir == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s (%d bytes)", filepath.Join(dir, name), len(png))
}

// waitState waits, over the API's long-poll, until job id is in state.
func waitState(t *testing.T, d *dash, id uuid.UUID, state api.State) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := d.api.Wait(ctx, id, func(j api.Job) {
		if j.State == state {
			cancel()
		}
	})
	if ctx.Err() == nil {
		t.Fatalf("job %s ended (%v) before it was %s", id, err, state)
	}
}

// TestBrowser drives the dashboard in a real headless Chromium, on each
// store: log in, see a queue and its counts (which follow a new job),
// pause and resume it, watch a running sleep job's progress bar advance
// without a reload, cancel the job and see it end canceled, retry it,
// re-run it; per-item progress rows follow a remote worker's reports; a
// forged cross-site post is refused; a read key's pages have no button
// that writes; the pages fit 375 px, show the browser's time zone and
// follow its dark theme. With JOBD_UI_SCREENSHOTS=DIR it writes the
// screenshots of docs/dashboard.md there.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser tests (real Chromium) run without -short")
	}
	for _, driver := range drivers {
		// One browser at a time: the machine is small and shared.
		t.Run(driver, func(t *testing.T) { browserScenario(t, openStore(t, driver), driver == "sqlite") })
	}
}

func browserScenario(t *testing.T, st store.Store, screenshots bool) {
	shots := ""
	if screenshots {
		shots = os.Getenv("JOBD_UI_SCREENSHOTS")
	}
	d := newDash(t, st, dashOptions{Secret: secret, Engine: true, HealthInterval: 10 * time.Millisecond})
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		j := d.submit(api.SubmitRequest{Kind: "noop"})
		waitState(t, d, j.ID, api.State(job.StateSucceeded))
	}
	for _, q := range []string{"emails", "video"} {
		for i := 0; i < 2; i++ {
			d.submit(api.SubmitRequest{Kind: "render", Queue: q})
		}
	}
	sleeper := d.submit(api.SubmitRequest{Kind: "sleep", Args: json.RawMessage(`{"ms":600000,"steps":6000}`)})
	waitState(t, d, sleeper.ID, api.StateRunning)

	// A remote worker that runs a transcoding job, with per-quality rows.
	gpu, err := d.api.CreateWorker(ctx, api.WorkerRequest{Name: "gpu-1", Capabilities: []string{"gpu", "h264", "hevc"},
		Metadata: json.RawMessage(`{"region":"eu-west","gpu":"L4"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.api.CreateWorker(ctx, api.WorkerRequest{Name: "cpu-2", Capabilities: []string{"h264"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.api.SetSchedule(ctx, "nightly", api.ScheduleRequest{Cron: "0 3 * * *", Job: api.ScheduleJob{Kind: "noop"}}); err != nil {
		t.Fatal(err)
	}
	wc, err := client.New(d.URL, gpu.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	clip := d.submit(api.SubmitRequest{Kind: "transcode", Queue: "video", Priority: ptr(1),
		Args: json.RawMessage(`{"source":"s3://clips/launch.mov","qualities":["480p","720p","1080p"]}`)})
	claimed, err := wc.Claim(ctx, []string{"video"}, 1, 0)
	if err != nil || len(claimed) != 1 || claimed[0].ID != clip.ID {
		t.Fatalf("the worker's claim: %v %v", claimed, err)
	}
	if _, err := wc.WorkerHeartbeat(ctx, "busy", []api.Lease{{ID: clip.ID, LeaseToken: claimed[0].LeaseToken}}); err != nil {
		t.Fatal(err)
	}
	report := func(items string, done int64) {
		t.Helper()
		if _, err := wc.ReportProgress(ctx, clip.ID, claimed[0].LeaseToken, api.Progress{Phase: "encoding", Done: done, Total: 3,
			Items: json.RawMessage(items)}); err != nil {
			t.Fatal(err)
		}
	}
	report(`{"480p":{"done":120,"total":120,"state":"done"},"720p":{"done":60,"total":120,"state":"encoding"},"1080p":{"done":0,"total":120,"state":"queued"}}`, 1)
	d.waitSnapshot()

	b := newTab(t)

	// Log in: a page sends the browser to the login form, which the key
	// passes once.
	if status := b.open(d.URL + "/ui/"); status != http.StatusOK {
		t.Fatalf("the login page: %d", status)
	}
	if !strings.Contains(js[string](b, "location.pathname"), "/ui/login") {
		t.Fatalf("not at the login form: %s", js[string](b, "location.href"))
	}
	b.do(chromedp.SendKeys(chromedp.ID("key"), secret))
	if status := b.click("#login"); status != http.StatusOK {
		t.Fatalf("login: %d", status)
	}
	if got := js[string](b, "document.cookie"); got != "" {
		t.Errorf("the page's script can read cookies: %q", got)
	}

	// The overview: each queue and its counts.
	b.waitFor("the default queue's row", `document.querySelector('tr[data-queue="default"]') !== null`)
	for field, want := range map[string]string{"running": "1", "succeeded": "3"} {
		if got := b.text(`tr[data-queue="default"] [data-field="` + field + `"]`); got != want {
			t.Errorf("default %s: %q, want %q", field, got, want)
		}
	}
	if got := b.text(`tr[data-queue="emails"] [data-field="queued"]`); got != "2" {
		t.Errorf("emails queued: %q, want 2", got)
	}
	if got := b.text(`[data-field="workers_total"]`); got != "2" {
		t.Errorf("workers: %q, want 2", got)
	}
	b.screenshot(shots, "dashboard-overview.png")

	// The counts follow the queues without a reload.
	js[bool](b, "window.sameDocument = true")
	d.submit(api.SubmitRequest{Kind: "render", Queue: "emails"})
	b.waitFor("the emails queue's count to follow", `document.querySelector('tr[data-queue="emails"] [data-field="queued"]').textContent === '3'`)
	if !js[bool](b, "window.sameDocument === true") {
		t.Fatal("the overview reloaded to show the counts")
	}

	// Pause and resume a queue.
	if status := b.click(`tr[data-queue="emails"] button[data-action="pause"]`); status != http.StatusOK {
		t.Fatalf("pause: %d", status)
	}
	b.waitFor("the resume button", `document.querySelector('tr[data-queue="emails"] button[data-action="resume"]') !== null`)
	if !queuePaused(t, st, "emails") {
		t.Fatal("the queue is not paused")
	}
	if got := b.text(".flash"); got != "Queue emails paused." {
		t.Errorf("flash after pause: %q", got)
	}
	if status := b.click(`tr[data-queue="emails"] button[data-action="resume"]`); status != http.StatusOK {
		t.Fatalf("resume: %d", status)
	}
	if queuePaused(t, st, "emails") {
		t.Fatal("the queue is still paused")
	}

	// The sleep job's progress bar advances without a reload.
	jobPage := d.URL + "/ui/jobs/" + sleeper.ID.String()
	b.open(jobPage)
	b.waitFor("the progress bar", `document.getElementById('progress-bar') !== null`)
	start := js[float64](b, "document.getElementById('progress-bar').value")
	js[bool](b, "window.sameDocument = true")
	b.waitFor("the bar to advance", fmt.Sprintf(`document.getElementById('progress-bar').value > %v + 5`, start))
	if !js[bool](b, "window.sameDocument === true") {
		t.Fatal("the page reloaded to show the progress")
	}
	if got := b.text("#progress-phase"); got != "sleeping" {
		t.Errorf("phase: %q", got)
	}

	// Cancel it: it ends canceled, and the page shows it by itself.
	// (The page reloads itself as the job changes state: no load to
	// wait for but the state's.)
	b.do(chromedp.Click(chromedp.CSS("#cancel")))
	b.waitFor("the job to end canceled", `(document.getElementById('job-state') || {}).textContent === 'canceled'`)
	if got := d.job(sleeper.ID.String()); got.State != job.StateCanceled {
		t.Fatalf("the store says %s", got.State)
	}
	// Retry it: queued again with its attempts reset, then running.
	b.do(chromedp.Click(chromedp.CSS("#retry")))
	b.waitFor("the job to run again", `['queued', 'running'].includes((document.getElementById('job-state') || {}).textContent)`)
	if got := d.job(sleeper.ID.String()); got.State.Final() || got.Attempt > 1 {
		t.Fatalf("after the retry the store says %s, attempt %d", got.State, got.Attempt)
	}
	if _, err := d.api.Cancel(ctx, sleeper.ID); err != nil {
		t.Fatal(err)
	}
	// The page follows it to its end (and then stops following it).
	b.waitFor("the job to end canceled again", `(document.getElementById('job-state') || {}).textContent === 'canceled'`)
	// Re-run it: queued again, its old state kept as the previous one.
	b.do(chromedp.Click(chromedp.CSS("#rerun")))
	b.waitFor("the re-run", `(document.getElementById('job-rerun') || {}).textContent === '1'`)
	if got := d.job(sleeper.ID.String()); got.Rerun != 1 || got.PreviousState != job.StateCanceled {
		t.Fatalf("after the re-run the store says re-run %d, previous state %q", got.Rerun, got.PreviousState)
	}
	if _, err := d.api.Cancel(ctx, sleeper.ID); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the re-run to end canceled", `(document.getElementById('job-state') || {}).textContent === 'canceled'`)

	// Per-item progress rows follow the worker's reports live.
	b.open(d.URL + "/ui/jobs/" + clip.ID.String())
	b.waitFor("the 720p row", `document.querySelector('tr[data-item="720p"]') !== null`)
	js[bool](b, "window.sameDocument = true")
	report(`{"480p":{"done":120,"total":120,"state":"done"},"720p":{"done":120,"total":120,"state":"done"},"1080p":{"done":30,"total":120,"state":"encoding"}}`, 2)
	b.waitFor("the 1080p row to advance", `(document.querySelector('tr[data-item="1080p"] td.num') || {}).textContent === '25%'`)
	if !js[bool](b, "window.sameDocument === true") {
		t.Fatal("the page reloaded to show the rows")
	}
	if got := b.text("#lease-owner"); got != gpu.WorkerID {
		t.Errorf("lease owner: %q, want the worker %s", got, gpu.WorkerID)
	}
	b.screenshot(shots, "dashboard-job.png")

	b.open(d.URL + "/ui/workers")
	b.waitFor("the workers", `document.querySelectorAll('tr[data-worker]').length === 2`)
	b.screenshot(shots, "dashboard-workers.png")

	// A page of another origin (same site, another port: the session
	// cookie goes with its post) forges a pause: refused, 403.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/ui/queues/emails/pause">
<input name="csrf" value="forged"></form><script>document.getElementById("f").submit()</script>`, d.URL)
	}))
	defer evil.Close()
	b.open(evil.URL)
	b.waitFor("the forged post's answer", fmt.Sprintf(`location.href.startsWith(%q) && document.readyState === 'complete'`, d.URL))
	if got := b.text("h1"); got != "403 Forbidden" {
		t.Errorf("the forged post's answer: %q, want 403 Forbidden", got)
	}
	if queuePaused(t, st, "emails") {
		t.Fatal("a forged post paused the queue")
	}

	// A read key sees everything and has no button that writes.
	b.open(d.URL + "/ui/")
	if status := b.click("#logout"); status != http.StatusOK {
		t.Fatalf("logout: %d", status)
	}
	b.waitFor("the login form", `document.getElementById('key') !== null`)
	b.do(chromedp.SendKeys(chromedp.ID("key"), d.key("viewer", api.ScopeRead).Key))
	b.click("#login")
	for _, path := range []string{"/ui/", "/ui/jobs", "/ui/jobs/" + sleeper.ID.String(), "/ui/jobs/" + clip.ID.String(), "/ui/workers", "/ui/schedules", "/ui/async", "/ui/processes"} {
		if status := b.open(d.URL + path); status != http.StatusOK {
			t.Fatalf("GET %s as a read key: %d", path, status)
		}
		if n := js[int](b, `document.querySelectorAll('button.write, input[type=checkbox], form[method=post]:not(.who)').length`); n != 0 {
			t.Errorf("%s as a read key: %d elements that write", path, n)
		}
	}

	// 375 px wide: nothing makes the page wider than the screen (tables
	// scroll in their box).
	b.do(chromedp.EmulateViewport(375, 800, chromedp.EmulateMobile))
	for _, path := range []string{"/ui/", "/ui/jobs", "/ui/jobs/" + clip.ID.String(), "/ui/workers"} {
		b.open(d.URL + path)
		if w := js[int](b, "document.documentElement.scrollWidth"); w > 375 {
			t.Errorf("%s at 375 px is %d px wide", path, w)
		}
	}
	b.do(chromedp.EmulateReset())

	// Times in the browser's zone.
	if _, err := chromedp.Call(b.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Kolkata"}); err != nil {
		t.Fatal(err)
	}
	b.open(d.URL + "/ui/jobs/" + clip.ID.String())
	dt := js[string](b, `document.querySelector('time').getAttribute('datetime')`)
	shown := js[string](b, `document.querySelector('time').textContent`)
	at, err := time.Parse(time.RFC3339Nano, dt)
	if err != nil {
		t.Fatal(err)
	}
	kolkata := time.FixedZone("IST", 5*3600+1800)
	if strings.Contains(shown, "UTC") || !strings.Contains(shown, at.In(kolkata).Format("04:05")) {
		t.Errorf("time %s shown as %q, want Kolkata's %s", dt, shown, at.In(kolkata).Format("15:04:05"))
	}

	// The theme follows the system's.
	background := func(scheme string) string {
		if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}); err != nil {
			t.Fatal(err)
		}
		return js[string](b, "getComputedStyle(document.body).backgroundColor")
	}
	if light, dark := background("light"), background("dark"); light == dark || dark != "rgb(20, 23, 29)" {
		t.Errorf("backgrounds: light %s, dark %s", light, dark)
	}
}

func queuePaused(t *testing.T, st store.Store, name string) bool {
	t.Helper()
	qs, err := st.QueueList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Name == name {
			return q.Paused
		}
	}
	return false
}
