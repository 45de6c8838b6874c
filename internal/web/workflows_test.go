package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// wfQueue is the queue of the tests' workflow tasks, which no engine
// serves: the tests claim and finish them through the store.
const wfQueue = "wf"

// diamond submits the workflow a → b, c → d of kind "step" on queue
// (wfQueue for ""), named name, and returns its id and its tasks by ref.
func diamond(t testing.TB, st store.Store, name, queue string) (uuid.UUID, map[string]*job.Job) {
	t.Helper()
	if queue == "" {
		queue = wfQueue
	}
	task := func(ref string, deps ...string) job.TaskParams {
		return job.TaskParams{Ref: ref, DependsOn: deps, InsertParams: job.InsertParams{Queue: queue, Kind: "step"}}
	}
	return submitWorkflow(t, st, name, task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c"))
}

func submitWorkflow(t testing.TB, st store.Store, name string, tasks ...job.TaskParams) (uuid.UUID, map[string]*job.Job) {
	t.Helper()
	res, err := st.WorkflowSubmit(context.Background(), store.WorkflowSubmitParams{WorkflowParams: job.WorkflowParams{Name: name, Tasks: tasks}})
	if err != nil {
		t.Fatalf("submit workflow %s: %v", name, err)
	}
	byRef := map[string]*job.Job{}
	for _, j := range res.Tasks {
		byRef[j.Ref] = j
	}
	return res.Workflow.ID, byRef
}

// runTasks claims the queued tasks of wfQueue, which must be exactly
// refs, and ends each as outcome says (its ref to "succeeded" or
// "failed"; a failure is for good).
func runTasks(t testing.TB, st store.Store, outcome map[string]string) {
	t.Helper()
	ctx := context.Background()
	claimed, err := st.JobClaim(ctx, store.ClaimParams{Queue: wfQueue, Max: 100, Owner: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != len(outcome) {
		t.Fatalf("claimed %d tasks, want %d (%v)", len(claimed), len(outcome), outcome)
	}
	for _, j := range claimed {
		o := store.Outcome{Lease: store.LeaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"ref":"` + j.Ref + `"}`)}}
		switch outcome[j.Ref] {
		case "succeeded":
		case "failed":
			o.Status, o.Error = store.OutcomeFailed, "encoder crashed"
		default:
			t.Fatalf("claimed task %q, want one of %v", j.Ref, outcome)
		}
		res, err := st.JobFinish(ctx, []store.Outcome{o})
		if err != nil || res[0].Lost {
			t.Fatalf("finish %s: %v %+v", j.Ref, err, res)
		}
	}
}

var nodeRE = regexp.MustCompile(`<g class="node s-([a-z]+)" data-task="([0-9a-f-]+)" data-ref="([^"]*)" data-column="(\d+)">`)

// nodes reads a workflow page's graph: each node's state and column by
// ref, with the link around it.
func nodes(t *testing.T, body string) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	for _, m := range nodeRE.FindAllStringSubmatch(body, -1) {
		if !strings.Contains(body, `<a href="/ui/jobs/`+m[2]+`"><g class="node`) {
			t.Errorf("node %s is not a link to its task's page", m[3])
		}
		out[m[3]] = [2]string{m[1], m[4]}
	}
	return out
}

// TestWorkflowPages: the workflows list (counts, filters, paging), a
// workflow's graph (nodes by state in columns by depth, edges, links),
// its summary, its task table and journal, and a task's page linking
// back; a failure in the middle shown canceling its descendant.
func TestWorkflowPages(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{})
		id, tasks := diamond(t, st, "transcode", "")
		other, _ := diamond(t, st, "thumbnails", "elsewhere")
		b := d.browser()

		// The graph before anything ran: a queued, the rest waiting.
		p := b.get("/ui/workflows/" + id.String())
		if p.status != http.StatusOK {
			t.Fatalf("GET workflow: %d %s", p.status, p.body)
		}
		want := map[string][2]string{"a": {"queued", "0"}, "b": {"waiting", "1"}, "c": {"waiting", "1"}, "d": {"waiting", "2"}}
		if got := nodes(t, p.body); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("nodes %v, want %v", got, want)
		}
		if n := strings.Count(p.body, `<path class="edge"`); n != 4 {
			t.Errorf("%d edges drawn, want 4", n)
		}
		if !strings.Contains(p.body, `data-from="`+tasks["a"].ID.String()+`" data-to="`+tasks["b"].ID.String()+`"`) {
			t.Errorf("no arrow from a to b")
		}
		if !strings.Contains(p.body, `data-summary="/ui/workflows/`+id.String()+`/summary" data-period="2000"`) {
			t.Errorf("a running workflow's page does not follow it")
		}
		if strings.Contains(p.body, "style=") {
			t.Errorf("the page has inline styles, which the Content-Security-Policy refuses")
		}

		// a succeeds, b fails for good, c succeeds: d is canceled by b.
		runTasks(t, st, map[string]string{"a": "succeeded"})
		var sum struct {
			State  job.WorkflowState
			Counts map[job.State]int
			Tasks  map[uuid.UUID]job.State
		}
		p = b.get("/ui/workflows/" + id.String() + "/summary")
		if err := json.Unmarshal([]byte(p.body), &sum); err != nil || p.status != http.StatusOK {
			t.Fatalf("summary: %d %v %s", p.status, err, p.body)
		}
		if sum.State != job.WorkflowRunning || sum.Counts[job.StateQueued] != 2 || sum.Counts[job.StateSucceeded] != 1 ||
			sum.Tasks[tasks["b"].ID] != job.StateQueued || sum.Tasks[tasks["d"].ID] != job.StateWaiting || len(sum.Tasks) != 4 {
			t.Errorf("summary after a: %+v", sum)
		}
		runTasks(t, st, map[string]string{"b": "failed", "c": "succeeded"})
		p = b.get("/ui/workflows/" + id.String())
		want = map[string][2]string{"a": {"succeeded", "0"}, "b": {"failed", "1"}, "c": {"succeeded", "1"}, "d": {"canceled", "2"}}
		if got := nodes(t, p.body); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("nodes %v, want %v", got, want)
		}
		if !strings.Contains(p.body, `id="workflow-state">failed<`) || strings.Contains(p.body, "data-summary=") {
			t.Errorf("the ended workflow is not shown failed, or is still followed")
		}
		row := p.body[strings.Index(p.body, `<tr data-task="`+tasks["d"].ID.String()):]
		row = row[:strings.Index(row, "</tr>")]
		if !strings.Contains(row, `<a href="/ui/jobs/`+tasks["b"].ID.String()+`">b</a>`) {
			t.Errorf("d's row does not name b as its canceler: %s", row)
		}
		for _, ev := range []string{">submitted<", ">failed<"} {
			if !strings.Contains(p.body[strings.Index(p.body, `id="journal"`):], ev) {
				t.Errorf("the journal has no %s", ev)
			}
		}

		// The task's page links back to its workflow, and d's to b.
		p = b.get("/ui/jobs/" + tasks["d"].ID.String())
		if !strings.Contains(p.body, `<a href="/ui/workflows/`+id.String()+`" id="workflow-link">`) ||
			!strings.Contains(p.body, `id="task-ref">d<`) ||
			!strings.Contains(p.body, `<a href="/ui/jobs/`+tasks["b"].ID.String()+`" id="canceled-by">`) {
			t.Errorf("d's page does not link to its workflow and its canceler:\n%s", p.body)
		}
		if strings.Contains(p.body, `/rerun"`) {
			t.Errorf("a task's page offers a re-run, which tasks refuse")
		}

		// The list: newest first, with the row's counters; filters.
		p = b.get("/ui/workflows")
		if i, j := strings.Index(p.body, other.String()), strings.Index(p.body, id.String()); i < 0 || j < 0 || i > j {
			t.Fatalf("the list does not hold both workflows, newest first")
		}
		lrow := p.body[strings.Index(p.body, `<tr data-workflow="`+id.String()):]
		lrow = lrow[:strings.Index(lrow, "</tr>")]
		for f, v := range map[string]string{"tasks": "4", "succeeded": "2", "failed": "1", "canceled": "1", "active": "0"} {
			if !strings.Contains(lrow, `data-field="`+f+`">`+v+`<`) {
				t.Errorf("list row: %s is not %s: %s", f, v, lrow)
			}
		}
		for q, wantIDs := range map[string][]uuid.UUID{
			"name=transcode": {id}, "state=failed": {id}, "state=running": {other}, "name=nothing": nil,
		} {
			p := b.get("/ui/workflows?" + q)
			if got := strings.Count(p.body, `<tr data-workflow=`); got != len(wantIDs) {
				t.Errorf("?%s: %d rows, want %d", q, got, len(wantIDs))
			}
			for _, w := range wantIDs {
				if !strings.Contains(p.body, `<tr data-workflow="`+w.String()) {
					t.Errorf("?%s: no row for %s", q, w)
				}
			}
		}
		for _, q := range []string{"state=bogus", "after=nope", "name=%00"} {
			if p := b.get("/ui/workflows?" + q); p.status != http.StatusBadRequest {
				t.Errorf("?%s: %d, want 400", q, p.status)
			}
		}
		for _, path := range []string{"/ui/workflows/" + uuid.NewString(), "/ui/workflows/nope", "/ui/workflows/" + uuid.NewString() + "/summary"} {
			if p := b.get(path); p.status != http.StatusNotFound {
				t.Errorf("GET %s: %d, want 404", path, p.status)
			}
		}
	})
}

// TestWorkflowsPaging: 50 a page, by cursor, each workflow once.
func TestWorkflowsPaging(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{})
		for i := 0; i < 53; i++ {
			submitWorkflow(t, st, "w", job.TaskParams{Ref: "only", InsertParams: job.InsertParams{Queue: wfQueue, Kind: "step"}})
		}
		b := d.browser()
		seen := map[string]bool{}
		path, pages := "/ui/workflows?name=w", 0
		for path != "" {
			p := b.get(path)
			pages++
			for _, m := range regexp.MustCompile(`<tr data-workflow="([^"]+)"`).FindAllStringSubmatch(p.body, -1) {
				if seen[m[1]] {
					t.Fatalf("workflow %s on two pages", m[1])
				}
				seen[m[1]] = true
			}
			path = ""
			if m := regexp.MustCompile(`<a href="([^"]+)" rel="next"`).FindStringSubmatch(p.body); m != nil {
				path = strings.ReplaceAll(m[1], "&amp;", "&")
			}
		}
		if len(seen) != 53 || pages != 2 {
			t.Fatalf("%d workflows over %d pages, want 53 over 2", len(seen), pages)
		}
	})
}

// TestWorkflowGraphCap: a fan-out of 600 and its fan-in draws its first
// 500 tasks and says how many more there are; its counts are of all.
func TestWorkflowGraphCap(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{})
		tasks := []job.TaskParams{{Ref: "root", InsertParams: job.InsertParams{Queue: wfQueue, Kind: "step"}}}
		var leaves []string
		for i := 0; i < 600; i++ {
			ref := fmt.Sprintf("encode-%03d", i)
			leaves = append(leaves, ref)
			tasks = append(tasks, job.TaskParams{Ref: ref, DependsOn: []string{"root"}, InsertParams: job.InsertParams{Queue: wfQueue, Kind: "step"}})
		}
		tasks = append(tasks, job.TaskParams{Ref: "publish", DependsOn: leaves, InsertParams: job.InsertParams{Queue: wfQueue, Kind: "step"}})
		id, _ := submitWorkflow(t, st, "big", tasks...)
		p := d.browser().get("/ui/workflows/" + id.String())
		if p.status != http.StatusOK {
			t.Fatalf("GET: %d %s", p.status, p.body)
		}
		if n := len(nodeRE.FindAllString(p.body, -1)); n != 500 {
			t.Errorf("%d nodes drawn, want 500", n)
		}
		if !strings.Contains(p.body, "102 more tasks are not drawn") {
			t.Errorf("the page does not say that 102 tasks are not drawn")
		}
		if !strings.Contains(p.body, `data-count="waiting">601<`) {
			t.Errorf("the counts are not of every task")
		}
		if !strings.Contains(p.body, `data-period="2000"`) {
			t.Errorf("a workflow of 602 tasks is not followed every 2 s")
		}
	})
}

// TestWorkflowActions: cancel and retry a workflow from its page, with
// the scopes of the API's routes (cancel: cancel; retry: admin); a read
// key sees no button and its posts are refused.
func TestWorkflowActions(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		id, tasks := diamond(t, st, "transcode", "")
		page := "/ui/workflows/" + id.String()
		ctx := context.Background()

		reader := d.browser()
		reader.login(d.key("viewer", api.ScopeRead).Key)
		p := reader.get(page)
		for _, write := range []string{`class="write`, `/cancel"`, `/retry"`} {
			if strings.Contains(p.body, write) {
				t.Errorf("a read key's workflow page holds %s", write)
			}
		}
		for _, a := range []string{"/cancel", "/retry"} {
			if p := reader.act(page, page+a, nil); p.status != http.StatusForbidden {
				t.Errorf("POST %s as a read key: %d, want 403", a, p.status)
			}
		}

		// A cancel key cancels (a is claimed: it is asked to stop) and
		// cannot retry.
		canceler := d.browser()
		canceler.login(d.key("ops", api.ScopeRead, api.ScopeCancel).Key)
		claimed, err := st.JobClaim(ctx, store.ClaimParams{Queue: wfQueue, Max: 1, Owner: "test"})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim a: %v %v", claimed, err)
		}
		if p := canceler.get(page); !strings.Contains(p.body, `id="cancel"`) || strings.Contains(p.body, `id="retry"`) {
			t.Errorf("a cancel key's page: a cancel button and no retry button expected")
		}
		p = canceler.act(page, page+"/cancel", nil)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location(), page+"?msg=") {
			t.Fatalf("cancel: %d to %q", p.status, p.location())
		}
		wf, err := st.WorkflowGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if wf.Counts[job.StateCanceled] != 3 || wf.Tasks[0].State != job.StateRunning || !wf.Tasks[0].CancelRequested {
			t.Fatalf("after the cancel: %v, a %s", wf.Counts, wf.Tasks[0].State)
		}
		if p := canceler.act(page, page+"/retry", nil); p.status != http.StatusForbidden {
			t.Errorf("retry with a cancel key: %d, want 403", p.status)
		}
		res, err := st.JobFinish(ctx, []store.Outcome{{Lease: store.LeaseOf(claimed[0]), Outcome: job.Outcome{Status: store.OutcomeCanceled}}})
		if err != nil || res[0].Lost {
			t.Fatalf("a ends canceled: %v %+v", err, res)
		}

		// The admin retries it: every task runs again.
		admin := d.browser()
		admin.login(secret)
		p = admin.get(page)
		if !strings.Contains(p.body, `id="workflow-state">canceled<`) || !strings.Contains(p.body, `id="retry"`) || strings.Contains(p.body, `id="cancel"`) {
			t.Fatalf("the canceled workflow's page: a retry button and no cancel button expected")
		}
		p = admin.act(page, page+"/retry", nil)
		if p.status != http.StatusSeeOther {
			t.Fatalf("retry: %d %s", p.status, p.body)
		}
		if got := d.job(tasks["a"].ID.String()); got.State != job.StateQueued {
			t.Errorf("after the retry a is %s", got.State)
		}
		if got := d.job(tasks["d"].ID.String()); got.State != job.StateWaiting {
			t.Errorf("after the retry d is %s", got.State)
		}
		// A retry of a workflow with nothing to retry is refused (409).
		if p := admin.act(page, page+"/retry", nil); p.status != http.StatusConflict {
			t.Errorf("a second retry: %d, want 409", p.status)
		}
		// A post from another origin is refused before it changes anything.
		form := url.Values{"csrf": {admin.token(page)}}
		if p := admin.post(page+"/cancel", form, "Origin: http://evil.example", "Sec-Fetch-Site: cross-site"); p.status != http.StatusForbidden {
			t.Errorf("a cross-site cancel: %d, want 403", p.status)
		}
		if wf, _ := st.WorkflowGet(ctx, id); wf.State != job.WorkflowRunning {
			t.Errorf("a cross-site post changed the workflow: %s", wf.State)
		}
	})
}

// BenchmarkWorkflowPage renders a workflow of 10 000 tasks (the default
// --workflow-max-tasks: a root, a fan-out of 9 998 and their fan-in) over
// real HTTP on each store: its page (500 tasks drawn) and the summary
// its script asks for every 2 s.
//
//	go test ./internal/web -run '^$' -bench WorkflowPage -benchtime 20x
func BenchmarkWorkflowPage(b *testing.B) {
	for _, driver := range drivers {
		b.Run(driver, func(b *testing.B) {
			st := openStore(b, driver)
			d := newDash(b, st, dashOptions{})
			step := job.InsertParams{Queue: wfQueue, Kind: "step"}
			tasks := []job.TaskParams{{Ref: "root", InsertParams: step}}
			var leaves []string
			for i := 0; i < job.DefaultWorkflowMaxTasks-2; i++ {
				ref := fmt.Sprintf("encode-%04d", i)
				leaves = append(leaves, ref)
				tasks = append(tasks, job.TaskParams{Ref: ref, DependsOn: []string{"root"}, InsertParams: step})
			}
			tasks = append(tasks, job.TaskParams{Ref: "publish", DependsOn: leaves, InsertParams: step})
			id, _ := submitWorkflow(b, st, "big", tasks...)
			br := d.browser()
			for _, path := range []string{"", "/summary"} {
				b.Run(strings.TrimPrefix(path, "/")+"page", func(b *testing.B) {
					for b.Loop() {
						if p := br.get("/ui/workflows/" + id.String() + path); p.status != http.StatusOK {
							b.Fatalf("GET: %d", p.status)
						}
					}
				})
			}
		})
	}
}
