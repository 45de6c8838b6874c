package surface_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

var fuzzSeed = flag.Uint64("fuzzseed", 0, "seed of TestFuzzHTTPSurface; 0 takes JOBD_FUZZ_SEED, or a random one")

// defaultFuzzRequests is CI's budget per store: a few seconds each, both
// stores at once. JOBD_FUZZ_REQUESTS raises it for a long run.
const defaultFuzzRequests = 1000

// shortFuzzRequests is the budget under -short: the fast tier's taste of
// the fuzz, the full budget running in CI.
const shortFuzzRequests = 150

// maxFindings stops a run that keeps finding things.
const maxFindings = 30

// TestFuzzHTTPSurface sends every operation of the node's own served
// OpenAPI document (the API's and the gateway's) requests that the
// mutations break — wrong types, missing and unknown members, NUL, lone
// surrogates and invalid UTF-8, edge and huge numbers, long strings, deep
// nesting, bodies that are not JSON, wrong content types, garbage path
// ids, query values and cursors, odd headers, wrong credentials — on both
// stores, with authentication on, and checks every answer:
//
//   - nothing answers 5xx (but a process task's 504 task-timeout, which
//     says the task goes on);
//   - every 4xx is a problem document whose type is one of
//     api.ProblemKinds, with that kind's status, and on the gateway's
//     ArangoDB routes (x-problem-members) ArangoDB's members too; a 401
//     says WWW-Authenticate; a JSON answer is valid JSON;
//   - 401 or 403 exactly when the credential lacks the declared scope,
//     decided before any store call but the credential's lookup;
//   - a refused write changed nothing: the database's fingerprint is the
//     same after it (compared after every refusal that called a store
//     method that writes, and one in four of the others, whose recorded
//     store calls already show they wrote nothing);
//   - a request that names, in a job's queue, kind or keys, what only
//     jobd may insert (the "reserved name" mutation) is never accepted;
//   - no answer and no log line carries a secret: the admin secret, the
//     upstream's password, any key's secret part, or a lease token other
//     than those a claim hands to its caller.
//
// The seed is printed; -fuzzseed=N (or JOBD_FUZZ_SEED=N) replays a run,
// JOBD_FUZZ_REQUESTS=N sets the requests sent per store.
func TestFuzzHTTPSurface(t *testing.T) {
	seed, budget := fuzzSettings(t)
	t.Logf("seed %d, %d requests per store; replay with: go test ./internal/surface -run TestFuzzHTTPSurface -fuzzseed=%d", seed, budget, seed)
	eachStore(t, func(t *testing.T, driver string) {
		n := startNode(t, driver)
		f := &fuzz{
			t: t, n: n, seed: seed, ops: n.fetchSpec().Ops,
			g:        &generator{r: rand.New(rand.NewPCG(seed, 0x6a6f6264)), creds: n.creds},
			sample:   rand.New(rand.NewPCG(seed, 1)),
			statuses: map[int]int{}, perOp: map[string]int{}, findings: map[string]int{},
		}
		start := time.Now()
		f.run(budget)
		f.report(time.Since(start))
	})
}

func fuzzSettings(t *testing.T) (seed uint64, budget int) {
	seed = *fuzzSeed
	if v := os.Getenv("JOBD_FUZZ_SEED"); seed == 0 && v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("JOBD_FUZZ_SEED=%q: %v", v, err)
		}
	}
	if seed == 0 {
		seed = rand.Uint64()
	}
	budget = defaultFuzzRequests
	if testing.Short() {
		budget = shortFuzzRequests
	}
	if v := os.Getenv("JOBD_FUZZ_REQUESTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("JOBD_FUZZ_REQUESTS=%q: want a positive number", v)
		}
		budget = n
	}
	return seed, budget
}

// fuzz is one store's run.
type fuzz struct {
	t    *testing.T
	n    *node
	g    *generator
	ops  []*operation
	seed uint64
	// sample picks which read-only refusals get their fingerprint
	// compared, apart from g's choices.
	sample *rand.Rand

	sent, held, skipped int
	statuses            map[int]int
	perOp               map[string]int
	findings            map[string]int // rule and operation → count
	logOffset           int
	// known is the fingerprint as it still is: taken after a refused
	// write, kept across reads, dropped by any request that may have
	// written. It spares most writes' "before" reads.
	known *fingerprint
}

func (f *fuzz) run(budget int) {
	var order []*operation
	for f.sent+f.skipped < budget && len(f.findings) < maxFindings {
		if len(order) == 0 {
			order = slices.Clone(f.ops)
			f.g.r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		op := order[0]
		order = order[1:]
		f.holdLease()
		d := f.g.valid(op)
		if f.g.r.IntN(8) != 0 {
			f.g.mutate(d)
		}
		f.one(d)
	}
}

// readCalls are the store methods that write nothing.
var readCalls = []string{
	"Ping", "SchemaVersion", "JobGet", "JobList", "JobEvents", "QueueList", "QueueDepth", "KeyList", "KeyByPrefix",
	"WorkerGet", "WorkerList", "ProcessGet", "ProcessList",
}

// wrote reports whether calls hold a store method that may write.
func wrote(calls []string) bool {
	for _, c := range calls {
		if !slices.Contains(readCalls, c) {
			return true
		}
	}
	return false
}

// mayWrite reports whether a request of op may change the database: any
// method but GET, and any method of the gateway's /gw/ (a GET with
// X-Async is queued).
func mayWrite(op *operation) bool {
	return op.Method != http.MethodGet || strings.HasPrefix(op.Path, "/gw/")
}

// longPoll reports whether op may hold its answer by design (a wait, a
// claim's long-poll, a process task's ?timeout=).
func longPoll(op *operation) bool {
	return op.String() == "GET /api/v1/jobs/{id}" || op.String() == "POST /api/v1/worker/claim" ||
		(op.Method == "POST" && strings.HasPrefix(op.Path, "/api/v1/processes/"))
}

// one sends d and checks its answer.
func (f *fuzz) one(d *draft) {
	req := d.render()
	op := d.op
	write := mayWrite(op) || d.method != ""
	var before fingerprint
	if write {
		if f.known != nil {
			before = *f.known
		} else {
			before = f.must(f.n.fingerprint(f.g.lease))
		}
		f.known = nil
	}
	wait := 30 * time.Second
	if longPoll(op) {
		wait = 3 * time.Second
	}
	a, err := f.n.send(req, wait)
	if err != nil {
		if strings.HasPrefix(err.Error(), "build ") {
			f.skipped++ // a request net/http will not send (a bad URL)
			return
		}
		f.find("transport", d, nil, err.Error())
		return
	}
	f.sent++
	f.perOp[op.String()]++
	if a.held {
		f.known = nil // it may still write
		if !longPoll(op) {
			f.find("no answer", d, a, fmt.Sprintf("no answer within %s", wait))
		}
		f.held++
		return
	}
	f.statuses[a.status]++
	f.checkStatus(d, a)
	f.checkAuth(d, a)
	f.checkReserved(d, a)
	if write && a.status >= 400 && a.status < 500 && !decidedByTask(req.method, op, a) {
		// A refusal that called the store for reads only cannot have
		// written: its fingerprint is compared one time in four, the
		// others every time.
		if wrote(a.calls) || f.sample.IntN(4) == 0 {
			after := f.must(f.n.fingerprint(f.g.lease))
			if diff := before.diff(after); diff != "" {
				f.find("refused write changed the database", d, a, diff)
			}
			f.known = &after
		} else {
			f.known = &before
		}
	}
	f.checkSecrets(d, a)
	f.learn(d, a)
}

// checkStatus: no 5xx; every 4xx a problem of a known kind; JSON valid.
func (f *fuzz) checkStatus(d *draft, a *answer) {
	ct := a.header.Get("Content-Type")
	switch {
	case a.status >= 500 && !taskTimeout(d.op, a):
		f.find("5xx", d, a, "")
	case a.status >= 400 && a.status < 500:
		var p api.Problem
		if ct != api.ProblemContentType {
			f.find("4xx not a problem document", d, a, "Content-Type "+ct)
		} else if err := json.Unmarshal(a.body, &p); err != nil {
			f.find("4xx not a problem document", d, a, err.Error())
		} else if k, known := api.LookupProblem(p.Type); !known || k.Status != a.status || p.Status != a.status || p.Title != k.Title {
			f.find("problem of no known kind", d, a, fmt.Sprintf("%+v", p))
		} else if missing := missingMembers(d.op, a); missing != "" {
			f.find("problem without its route's members", d, a, missing)
		}
		if a.status == 401 && !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
			f.find("401 without WWW-Authenticate", d, a, "")
		}
	case strings.HasPrefix(ct, "application/json") && !json.Valid(a.body):
		f.find("invalid JSON answer", d, a, "")
	}
}

// missingMembers names what a problem answer of op lacks of the members
// its route declares (ProblemMembers: ArangoDB's error, errorNum,
// errorMessage and code, the last the status); "" when nothing.
func missingMembers(op *operation, a *answer) string {
	if len(op.ProblemMembers) == 0 || noRoute(a) {
		return ""
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(a.body, &doc); err != nil {
		return err.Error()
	}
	for _, m := range op.ProblemMembers {
		if _, ok := doc[m]; !ok {
			return "no " + m
		}
	}
	if code, ok := doc["code"]; ok && string(code) != strconv.Itoa(a.status) {
		return "code " + string(code) + " is not the status"
	}
	if e, ok := doc["error"]; ok && string(e) != "true" {
		return "error is " + string(e)
	}
	return ""
}

// checkAuth: 401/403 exactly when the credential lacks the scope, and
// then no store call but the credential's lookup.
func (f *fuzz) checkAuth(d *draft, a *answer) {
	if a.status >= 300 && a.status < 400 || a.status == 405 || noRoute(a) || d.method != "" {
		return // the request no longer names the operation
	}
	refused := (a.status == 401 || a.status == 403) && !queueRefusal(d, a)
	switch ok := passes(d.op, d.cred); {
	case ok && refused:
		f.find("credential refused", d, a, "")
	case !ok && !refused:
		f.find("credential not refused", d, a, "")
	case !ok && d.cred.invalid && a.status != 401:
		f.find("invalid credential not 401", d, a, "")
	}
	if refused {
		for _, c := range a.calls {
			if !slices.Contains(credentialLookups, c) {
				f.find("refused after a store call", d, a, fmt.Sprint(a.calls))
			}
		}
	}
}

// queueRefusal reports whether a is a 403 that the request's queues
// decided, not its credential: a submission to a queue outside the key's
// (naming queue), or a claim of a queue outside the worker's or of one
// of jobd's own (naming queues, on a worker route, where no key's queue
// limit is checked).
func queueRefusal(d *draft, a *answer) bool {
	var p api.Problem
	if a.status != 403 || json.Unmarshal(a.body, &p) != nil {
		return false
	}
	return p.Field == "queue" || p.Field == "queues" && strings.HasPrefix(d.op.Path, "/api/v1/worker/")
}

// noRoute reports whether a is the API's answer to a path no route has.
func noRoute(a *answer) bool {
	var p api.Problem
	return a.status == 404 && json.Unmarshal(a.body, &p) == nil && strings.HasPrefix(p.Detail, "no route ")
}

// decidedByTask reports whether a is a process task route's refusal
// decided by the task itself (no such process, or one in the wrong
// status): such a call is queued as a task job, which the journal keeps,
// before the process's own serialised task can say no.
func decidedByTask(method string, op *operation, a *answer) bool {
	if method != http.MethodPost || !strings.HasPrefix(op.Path, "/api/v1/processes/") {
		return false
	}
	var p api.Problem
	return json.Unmarshal(a.body, &p) == nil && (p.Type == api.ProblemNotFound || p.Type == api.ProblemWrongState) &&
		!strings.HasPrefix(p.Detail, "no process namespace")
}

// checkSecrets: no secret in the answer, the claim's own lease tokens
// aside, nor in what the node logged since the last request.
func (f *fuzz) checkSecrets(d *draft, a *answer) {
	allowed := map[string]bool{}
	if d.op.String() == "POST /api/v1/worker/claim" && a.status == 200 {
		var cr api.ClaimResponse
		_ = json.Unmarshal(a.body, &cr)
		for _, j := range cr.Jobs {
			allowed[j.LeaseToken.String()] = true
		}
	}
	var text strings.Builder
	text.Write(a.body)
	for k, vs := range a.header {
		fmt.Fprintf(&text, "\n%s: %s", k, strings.Join(vs, ", "))
	}
	if leaks := f.n.secrets.leaks(text.String(), allowed); len(leaks) > 0 {
		f.find("secret in an answer", d, a, strings.Join(leaks, "; "))
	}
	logs, offset := f.n.logs.from(f.logOffset)
	f.logOffset = offset
	if leaks := f.n.secrets.leaks(logs, nil); len(leaks) > 0 {
		f.find("secret in a log line", d, a, strings.Join(leaks, "; "))
	}
	if strings.Contains(logs, "panic") {
		f.find("panic logged", d, a, firstLine(logs, "panic"))
	}
}

// learn keeps what the answer teaches (ids, keys, cursors) and lets go of
// the held lease once it ended.
func (f *fuzz) learn(d *draft, a *answer) {
	g := f.g
	if a.status >= 300 {
		return
	}
	var v struct{ ID, JobID, WorkerID, APIKey, Key, Secret, NextCursor, ResumeCursor string }
	_ = json.Unmarshal(a.body, &v)
	method := d.op.Method
	if d.method != "" {
		method = d.method
	}
	switch op := method + " " + d.op.Path; {
	case op == "POST /api/v1/jobs" || op == "POST /api/v1/jobs/trigger":
		g.keep(&g.pools.jobIDs, v.ID+v.JobID)
	case op == "POST /api/v1/keys":
		g.keep(&g.pools.keyIDs, v.ID)
		f.n.secrets.addKey(v.Key)
	case op == "POST /api/v1/webhooks":
		g.keep(&g.pools.webhookIDs, v.ID)
		if v.Secret != "" {
			f.n.secrets.add(v.Secret) // shown once, in this answer
		}
	case op == "POST /api/v1/workers":
		g.keep(&g.pools.workerIDs, v.WorkerID)
		f.n.secrets.addKey(v.APIKey)
	case op == "GET /api/v1/jobs":
		g.keep(&g.pools.cursors, v.NextCursor)
		g.keep(&g.pools.cursors, v.ResumeCursor)
	case strings.HasPrefix(op, "POST /api/v1/processes/"):
		g.keep(&g.pools.processIDs, d.path["id"])
	}
	if id := a.header.Get("X-Async-Id"); id != "" {
		g.keep(&g.pools.asyncIDs, id)
	}
	if g.lease != nil && (mayWrite(d.op) || d.method != "") {
		j, err := f.n.st.JobGet(f.t.Context(), uuid.MustParse(g.lease.id))
		if err != nil || j.LeaseToken.String() != g.lease.token {
			g.lease = nil
		}
	}
	if mayWrite(d.op) || d.method != "" {
		f.known = nil
	}
}

// holdLease makes sure the fixture worker holds a job, which valid
// worker calls name: a job of a queue of its own (no mutation names it),
// with an hour's lease, claimed over HTTP.
func (f *fuzz) holdLease() {
	if f.g.lease != nil {
		return
	}
	f.known = nil
	var j api.Job
	f.n.mustJSON("POST", "/api/v1/jobs", `{"kind":"fuzz.held","queue":"`+heldQueue+`","lease_ttl":"1h"}`, 201, &j)
	a, err := f.n.send(request{method: "POST", path: "/api/v1/worker/claim", body: []byte(`{"queues":["` + heldQueue + `"]}`),
		cred: "Bearer " + f.n.creds.worker}, 30*time.Second)
	if err != nil {
		f.t.Fatal(err)
	}
	var cr api.ClaimResponse
	if a.status != 200 || json.Unmarshal(a.body, &cr) != nil || len(cr.Jobs) != 1 {
		f.t.Fatalf("the fixture worker's claim: %d %s", a.status, a.body)
	}
	f.g.lease = &lease{id: cr.Jobs[0].ID.String(), token: cr.Jobs[0].LeaseToken.String()}
	f.g.keep(&f.g.pools.jobIDs, f.g.lease.id)
}

// find records a finding; the first of each rule and operation fails the
// test with what replays it.
func (f *fuzz) find(rule string, d *draft, a *answer, detail string) {
	key := rule + ": " + d.op.String()
	f.findings[key]++
	if f.findings[key] > 1 {
		return
	}
	req := d.render()
	got := "no answer"
	if a != nil {
		got = fmt.Sprintf("%d %s", a.status, clip(a.body, 400))
	}
	f.t.Errorf("%s (seed %d)\n  request: %s %s\n  body: %s\n  %s\n  answer: %s\n  %s",
		rule, f.seed, req.method, clip([]byte(req.path), 300), clip(req.body, 300), d.describe(), got, detail)
}

func (f *fuzz) must(fp fingerprint, err error) fingerprint {
	if err != nil {
		f.t.Fatalf("fingerprint: %v", err)
	}
	return fp
}

// report logs what was sent and found.
func (f *fuzz) report(took time.Duration) {
	codes := make([]int, 0, len(f.statuses))
	for c := range f.statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", c, f.statuses[c]))
	}
	least, most := -1, 0
	for _, op := range f.ops {
		c := f.perOp[op.String()]
		if least < 0 || c < least {
			least = c
		}
		most = max(most, c)
	}
	f.t.Logf("%s: %d requests in %s over %d operations (%d to %d each), %d long-polls held, %d not sendable; statuses %s; %d findings",
		f.n.driver, f.sent, took.Round(time.Millisecond), len(f.ops), least, most, f.held, f.skipped, strings.Join(parts, " "), len(f.findings))
	for k, c := range f.findings {
		f.t.Logf("finding ×%d: %s", c, k)
	}
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%q… (%d bytes)", b[:n], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func firstLine(text, word string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, word) {
			return clip([]byte(line), 500)
		}
	}
	return ""
}
