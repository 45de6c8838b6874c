package problem_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd"
	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.DiscardHandler)

// openStore opens a migrated store of driver on a fresh database.
func openStore(t *testing.T, driver string) store.Store {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	if driver == "sqlite" {
		st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "jobd.db"), sqlite.Options{})
	} else {
		st, err = postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{Logger: quiet})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// The walk's limits, small so that real requests reach them.
const (
	walkSecret     = "walk-admin-s3cret"
	walkMaxBody    = 4096 // the API's body limit, and the gateway's args limit
	walkMaxPending = 3
)

// walkNode is a jobd as `jobd serve` composes it, with authentication on:
// the API (with the gateway's result routes and a process namespace "c")
// and the gateway, whose upstreams are "up" (answers), "slow" (never
// answers within its 20ms timeout) and "dead" (refuses connections). The
// gateway queue has no worker pool: the test moves its jobs itself.
type walkNode struct {
	t       *testing.T
	URL     string
	st      store.Store
	release chan struct{} // unblocks the processor's blocked calls
}

func startWalkNode(t *testing.T, st store.Store) *walkNode {
	t.Helper()
	n := &walkNode{t: t, st: st, release: make(chan struct{})}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-n.release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "ok")
	}))
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	upURL, _ := url.Parse(up.URL)
	deadURL, _ := url.Parse(dead.URL)

	processor := func(ctx context.Context, req *process.Request) (*process.Response, error) {
		var args struct{ Fail, Block bool }
		_ = json.Unmarshal(req.Args, &args)
		if args.Block {
			select {
			case <-n.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if args.Fail {
			return nil, io.ErrUnexpectedEOF
		}
		return &process.Response{}, nil
	}
	server, err := jobd.NewServer(context.Background(), jobd.Config{
		Store: st, Logger: quiet, AdminSecret: walkSecret, MaxArgsBytes: walkMaxBody,
		Engine: engine.Config{
			ShutdownTimeout: 50 * time.Millisecond,
			Queues:          []engine.QueueConfig{{Queue: process.DefaultQueue, Concurrency: 4}},
		},
		HTTP:      jobd.HTTPConfig{MaxBodyBytes: walkMaxBody},
		Processes: []process.Namespace{{Name: "c", Processor: process.ProcessorFunc(processor)}},
		Gateway: jobd.GatewayConfig{
			MaxPending: walkMaxPending, Concurrency: -1,
			Upstreams: []jobd.Upstream{
				{Name: "up", URL: upURL},
				{Name: "slow", URL: upURL, Timeout: 20 * time.Millisecond},
				{Name: "dead", URL: deadURL},
			},
		},
		Webhooks: jobd.WebhookConfig{Concurrency: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.Handler())
	n.URL = srv.URL

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx) }()
	t.Cleanup(func() {
		close(n.release)
		cancel()
		<-done
		srv.Close()
		up.Close()
		st.Close()
	})
	return n
}

// do sends a request with the admin secret unless hdr has an
// Authorization ("Authorization: " for none).
func (n *walkNode) do(method, path, body string, hdr ...string) *http.Response {
	n.t.Helper()
	return send(n.t, n.URL, method, path, body, append([]string{"Authorization: Bearer " + walkSecret}, hdr...)...)
}

func send(t *testing.T, base, method, path, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// decode reads a 2xx JSON answer into v.
func decode(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, b)
	}
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
}

// asyncRequest queues an async request (X-Async: store) and returns its
// job id.
func (n *walkNode) asyncRequest() uuid.UUID {
	n.t.Helper()
	resp := n.do("POST", "/gw/up/echo", "{}", "X-Async: store")
	resp.Body.Close()
	id, err := uuid.Parse(resp.Header.Get("X-Async-Id"))
	if resp.StatusCode != http.StatusAccepted || err != nil {
		n.t.Fatalf("async request: %d, id %q", resp.StatusCode, resp.Header.Get("X-Async-Id"))
	}
	return id
}

// finishAsync queues an async request and finishes it through the store
// as a worker would: with outcome status and result. Only one gateway job
// is queued when it claims: the one it made.
func (n *walkNode) finishAsync(status store.OutcomeStatus, result string) uuid.UUID {
	n.t.Helper()
	id := n.asyncRequest()
	ctx := context.Background()
	js, err := n.st.JobClaim(ctx, store.ClaimParams{Queue: gateway.Queue, Max: 1, Owner: "test"})
	if err != nil || len(js) != 1 || js[0].ID != id {
		n.t.Fatalf("claim %s: %v", id, err)
	}
	o := store.Outcome{Lease: store.Lease{ID: id, Token: js[0].LeaseToken}, Outcome: job.Outcome{Status: status, Error: "connection refused"}}
	if result != "" {
		o.Result = json.RawMessage(result)
	}
	if res, err := n.st.JobFinish(ctx, []store.Outcome{o}); err != nil || res[0].Lost {
		n.t.Fatalf("finish %s: %+v, %v", id, res, err)
	}
	return id
}

// step is one request that must be answered with the problem of kind.
type step struct {
	kind string
	name string
	send func() *http.Response
}

// TestWalkEveryKind drives, for every kind of problem of the table, real
// requests that produce it through the API and, where the gateway can
// produce it, through the gateway's own routes; each answer's status and
// type must be the table's, with the same headers everywhere.
func TestWalkEveryKind(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			walk(t, driver)
		})
	}
}

func walk(t *testing.T, driver string) {
	n := startWalkNode(t, openStore(t, driver))
	ctx := context.Background()
	big := `{"kind":"k","args":{"pad":"` + strings.Repeat("x", walkMaxBody) + `"}}`
	var reader api.Key
	decode(t, n.do("POST", "/api/v1/keys", `{"name":"r","scopes":["read"]}`), &reader)
	var worker api.WorkerCreated
	decode(t, n.do("POST", "/api/v1/workers", `{"name":"w"}`), &worker)
	var queued api.Job
	decode(t, n.do("POST", "/api/v1/jobs", `{"queue":"idle","kind":"k"}`), &queued)
	// An active twin of a canceled job, for a retry to duplicate.
	var canceled api.Job
	twin := `{"queue":"idle","kind":"parse","unique":"active","args":{"file":"a.pdf"}}`
	decode(t, n.do("POST", "/api/v1/jobs", twin), &canceled)
	decode(t, n.do("POST", "/api/v1/jobs/"+canceled.ID.String()+"/cancel", ""), nil)
	decode(t, n.do("POST", "/api/v1/jobs", twin), nil)
	decode(t, n.do("POST", "/api/v1/jobs", `{"queue":"idle","kind":"k","idempotency_key":"walk"}`), nil)
	decode(t, n.do("POST", "/api/v1/processes/c/p", ""), nil)
	decode(t, n.do("POST", "/api/v1/processes/c/q", ""), nil)

	// Gateway requests in every state, one pair per surface.
	var failed, broken, gone [2]uuid.UUID
	for i := range 2 {
		failed[i] = n.finishAsync(store.OutcomeFailed, "")
		broken[i] = n.finishAsync(store.OutcomeSucceeded, `{}`) // a stored response that does not decode
		gone[i] = n.asyncRequest()
		if _, err := n.st.JobCancel(ctx, gone[i]); err != nil {
			t.Fatal(err)
		}
	}
	pending := n.asyncRequest()
	decode(t, n.do("POST", "/gw/up/echo", "first", "X-Async: store", "Idempotency-Key: walk"), nil)

	apiSteps := []step{
		{api.ProblemBadRequest, "malformed JSON", func() *http.Response { return n.do("POST", "/api/v1/jobs", `{`) }},
		{api.ProblemValidation, "no kind", func() *http.Response { return n.do("POST", "/api/v1/jobs", `{"kind":""}`) }},
		{api.ProblemTooLarge, "large body", func() *http.Response { return n.do("POST", "/api/v1/jobs", big) }},
		{api.ProblemUnauthorized, "no credential", func() *http.Response { return n.do("GET", "/api/v1/jobs", "", "Authorization: ") }},
		{api.ProblemForbidden, "read key submits", func() *http.Response {
			return n.do("POST", "/api/v1/jobs", `{"kind":"k"}`, "Authorization: Bearer "+reader.Key)
		}},
		{api.ProblemNotFound, "unknown job", func() *http.Response { return n.do("GET", "/api/v1/jobs/"+uuid.NewString(), "") }},
		{api.ProblemMethodNotAllowed, "PATCH", func() *http.Response { return n.do("PATCH", "/api/v1/jobs", "") }},
		{api.ProblemWrongState, "retry of a queued job", func() *http.Response {
			return n.do("POST", "/api/v1/jobs/"+queued.ID.String()+"/retry", "")
		}},
		{api.ProblemDuplicate, "retry with an active twin", func() *http.Response {
			return n.do("POST", "/api/v1/jobs/"+canceled.ID.String()+"/retry", "")
		}},
		{api.ProblemLeaseLost, "complete without the lease", func() *http.Response {
			return n.do("POST", "/api/v1/worker/jobs/"+queued.ID.String()+"/complete",
				`{"lease_token":"`+uuid.NewString()+`"}`, "Authorization: Bearer "+worker.APIKey)
		}},
		{api.ProblemCanceled, "result of a canceled request", func() *http.Response {
			return n.do("PUT", "/api/v1/async/"+gone[0].String(), "")
		}},
		{api.ProblemInternal, "a stored response that does not decode", func() *http.Response {
			return n.do("PUT", "/api/v1/async/"+broken[0].String(), "")
		}},
		{api.ProblemUpstreamFailed, "result of a failed request", func() *http.Response {
			return n.do("PUT", "/api/v1/async/"+failed[0].String(), "")
		}},
		{api.ProblemProcessorFailed, "the processor fails", func() *http.Response {
			return n.do("POST", "/api/v1/processes/c/p/call", `{"args":{"fail":true}}`)
		}},
		{api.ProblemUnavailable, "the database does not answer", func() *http.Response {
			return statusOfClosedStore(t, driver)
		}},
		{api.ProblemTaskTimeout, "a task still running", func() *http.Response {
			return n.do("POST", "/api/v1/processes/c/q/call?timeout=20ms", `{"args":{"block":true}}`)
		}},
		{api.ProblemIdempotencyMismatch, "a key reused with other args", func() *http.Response {
			return n.do("POST", "/api/v1/jobs", `{"queue":"idle","kind":"k","idempotency_key":"walk","args":{"n":1}}`)
		}},
		{api.ProblemTooManyRequests, "a stream past the node's cap", func() *http.Response {
			return streamPastCap(t, n.st, queued.ID)
		}},
		{api.ProblemUnsupportedMediaType, "a text/plain body without credentials", func() *http.Response {
			return send(t, openAPI(t, n.st, nil), "POST", "/api/v1/jobs", `{"kind":"k"}`, "Content-Type: text/plain")
		}},
	}
	gatewaySteps := []step{
		{api.ProblemBadRequest, "bad X-Async", func() *http.Response { return n.do("POST", "/gw/up/echo", "", "X-Async: maybe") }},
		{api.ProblemTooLarge, "large body", func() *http.Response { return n.do("POST", "/gw/up/echo", big, "X-Async: store") }},
		{api.ProblemUnauthorized, "no credential", func() *http.Response { return n.do("GET", "/gw/up/echo", "", "Authorization: ") }},
		{api.ProblemForbidden, "read key forwards", func() *http.Response {
			return n.do("GET", "/gw/up/echo", "", "Authorization: Bearer "+reader.Key)
		}},
		{api.ProblemNotFound, "unknown request", func() *http.Response { return n.do("GET", "/_api/job/"+uuid.NewString(), "") }},
		{api.ProblemMethodNotAllowed, "POST", func() *http.Response { return n.do("POST", "/_api/job/"+uuid.NewString(), "") }},
		{api.ProblemWrongState, "delete of a pending request", func() *http.Response {
			return n.do("DELETE", "/_api/job/"+pending.String(), "")
		}},
		{api.ProblemIdempotencyMismatch, "a key reused with another body", func() *http.Response {
			return n.do("POST", "/gw/up/echo", "second", "X-Async: store", "Idempotency-Key: walk")
		}},
		{api.ProblemCanceled, "result of a canceled request", func() *http.Response {
			return n.do("PUT", "/_api/job/"+gone[1].String(), "")
		}},
		{api.ProblemInternal, "a stored response that does not decode", func() *http.Response {
			return n.do("PUT", "/_api/job/"+broken[1].String(), "")
		}},
		{api.ProblemUpstreamFailed, "result of a failed request", func() *http.Response {
			return n.do("PUT", "/_api/job/"+failed[1].String(), "")
		}},
		{api.ProblemUpstreamFailed, "a dead upstream", func() *http.Response { return n.do("GET", "/gw/dead/x", "") }},
		{api.ProblemUpstreamTimeout, "a slow upstream", func() *http.Response { return n.do("GET", "/gw/slow/slow", "") }},
		{api.ProblemBusy, "too many pending", func() *http.Response {
			for range walkMaxPending {
				resp := n.do("POST", "/gw/up/echo", "", "X-Async: true")
				if resp.StatusCode != http.StatusAccepted {
					return resp
				}
				resp.Body.Close()
			}
			return n.do("POST", "/gw/up/echo", "", "X-Async: true")
		}},
	}

	seen := map[string]map[string]bool{"api": {}, "gateway": {}}
	for surface, steps := range map[string][]step{"api": apiSteps, "gateway": gatewaySteps} {
		for _, s := range steps {
			checkProblem(t, surface+": "+s.name, s.send(), s.kind)
			seen[surface][s.kind] = true
		}
	}
	for _, k := range api.ProblemKinds() {
		gatewayOnly := k.Type == api.ProblemBusy || k.Type == api.ProblemUpstreamTimeout
		if !seen["api"][k.Type] && !gatewayOnly {
			t.Errorf("no request through the API produced %s", k.Type)
		}
	}
	for _, typ := range []string{
		api.ProblemBadRequest, api.ProblemTooLarge, api.ProblemUnauthorized, api.ProblemForbidden, api.ProblemNotFound,
		api.ProblemMethodNotAllowed, api.ProblemWrongState, api.ProblemCanceled, api.ProblemInternal,
		api.ProblemUpstreamFailed, api.ProblemUpstreamTimeout, api.ProblemBusy, api.ProblemIdempotencyMismatch,
	} {
		if !seen["gateway"][typ] {
			t.Errorf("no request through the gateway produced %s", typ)
		}
	}
}

// openAPI serves an API without credentials over st, its streams
// counted by streams (nil: the defaults), and returns its URL.
func openAPI(t *testing.T, st store.Store, streams *httpapi.Streams) string {
	t.Helper()
	h, err := httpapi.New(httpapi.Config{Store: st, Logger: quiet, Streams: streams})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// streamPastCap opens the stream of job id on an API that holds one
// stream at most, then asks for another.
func streamPastCap(t *testing.T, st store.Store, id uuid.UUID) *http.Response {
	t.Helper()
	streams, err := httpapi.NewStreams(httpapi.StreamLimits{MaxOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	base := openAPI(t, st, streams)
	first := send(t, base, "GET", "/api/v1/jobs/"+id.String()+"/stream", "")
	t.Cleanup(func() { first.Body.Close() })
	if first.StatusCode != http.StatusOK {
		t.Fatalf("the first stream: %d", first.StatusCode)
	}
	return send(t, base, "GET", "/api/v1/jobs/"+id.String()+"/stream", "")
}

// statusOfClosedStore asks GET /status of an API whose store is closed.
func statusOfClosedStore(t *testing.T, driver string) *http.Response {
	t.Helper()
	st := openStore(t, driver)
	h, err := httpapi.New(httpapi.Config{Store: st, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return send(t, srv.URL, "GET", "/status", "")
}

// checkProblem requires resp to be the problem of kind typ, with the
// headers of every problem answer.
func checkProblem(t *testing.T, what string, resp *http.Response, typ string) {
	t.Helper()
	defer resp.Body.Close()
	k, _ := api.LookupProblem(typ)
	body, _ := io.ReadAll(resp.Body)
	var p api.Problem
	if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != k.Status || p.Type != typ || p.Status != k.Status || p.Title != k.Title {
		t.Errorf("%s: %d %s, want %d %s", what, resp.StatusCode, body, k.Status, typ)
		return
	}
	h := resp.Header
	if h.Get("Content-Type") != api.ProblemContentType || h.Get("Cache-Control") != "no-store" ||
		(h.Get("WWW-Authenticate") != "") != (k.Status == http.StatusUnauthorized) ||
		(h.Get("Retry-After") != "") != k.Retryable() {
		t.Errorf("%s: headers %v", what, h)
	}
}
