package surface_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd"
	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// drivers are the stores every test runs against.
var drivers = []string{"sqlite", "postgres"}

// eachStore runs fn as a parallel subtest per driver.
func eachStore(t *testing.T, fn func(t *testing.T, driver string)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// The node's fixed names.
const (
	// namespace is the process namespace the node serves.
	namespace = "ns"
	// upstreamName is the gateway's upstream, at the test's own server.
	upstreamName = "up"
	// workQueue is the queue the generated claims name; no engine pool
	// works it.
	workQueue = "fuzz-work"
	// heldQueue is the queue of the job the fixture worker holds, which no
	// generated request names.
	heldQueue = "fuzz-held"
	// limitedQueues are the queues of the fixture key limited to queues:
	// every queue a generated submission names (generator.value).
	limitedQueues = `["default","fuzz-a","` + workQueue + `"]`
	// maxBody is the node's request body limit: twice the default, so
	// that a 1 MiB string reaches the handlers' own limits.
	maxBody = 2 << 20
	// tagHeader carries the test's number of a request, which the node
	// uses to note the request's store calls.
	tagHeader = "X-Surface-Request"
)

// node is a jobd as `jobd serve --admin-secret … --upstream up=…
// --processors […]` composes it: the API with the gateway's result routes
// and a process namespace, the gateway's /gw/ and /_api/job/ routes, and
// an engine working the gateway and process queues, over a real store
// seen through a recorder.
type node struct {
	t      *testing.T
	driver string
	URL    string
	st     store.Store // the store itself: the test's own reads
	logs   *syncBuffer // every log line of the node
	client *http.Client

	calls sync.Map // request tag → *callLog
	seq   atomic.Int64

	creds   credentials
	secrets *secrets
}

// credentials are the Authorization values the tests send.
type credentials struct {
	admin          string // the admin secret
	submit, read   string // keys of one scope
	adminKey       string
	cancel         string // a key of scope cancel alone
	limited        string // a key of submit, read and cancel limited to the generator's queues (limitedQueues)
	revoked        string // a key created, then revoked
	worker         string // the key of an enabled worker
	limitedWorker  string // the key of a worker registered with queues [workQueue]
	disabledWorker string // the key of a disabled worker
	workerID       string // the enabled worker's id
	disabledID     string
	upstreamPasswd string
}

// startNode starts a node on a fresh database of driver, stopped when t
// ends.
func startNode(t *testing.T, driver string) *node {
	t.Helper()
	n := &node{
		t: t, driver: driver, logs: &syncBuffer{},
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is an answer to check
		}},
		secrets: newSecrets(),
	}
	log := slog.New(slog.NewTextHandler(n.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	var err error
	switch driver {
	case "sqlite":
		n.st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "jobd.db"), sqlite.Options{Logger: log})
	case "postgres":
		n.st, err = postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{Logger: log})
	}
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	if err := n.st.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", driver, err)
	}
	rec := recorder{st: n.st, claimed: func(tokens []uuid.UUID) {
		for _, tok := range tokens {
			n.secrets.addToken(tok.String())
		}
	}}

	n.creds.admin = "admin-s3cret-" + uuid.NewString()
	n.creds.upstreamPasswd = "upstream-pa55-" + uuid.NewString()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "upstream ok\n")
	}))
	upURL, _ := url.Parse(up.URL)
	upURL.User = url.UserPassword("svc", n.creds.upstreamPasswd)

	// As jobd serve composes it (jobd.NewServer), with the test's
	// processor, upstream and store recorder.
	server, err := jobd.NewServer(ctx, jobd.Config{
		Store: rec, Logger: log, AdminSecret: n.creds.admin,
		Engine: engine.Config{
			ShutdownTimeout: 100 * time.Millisecond,
			// No rescue of expired leases but at start: it would requeue
			// the jobs the tests claim and leave, behind the fingerprints'
			// back.
			ReaperInterval: 24 * time.Hour,
			Queues: []engine.QueueConfig{
				{Queue: gateway.Queue, Concurrency: 4, Backoff: engine.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}},
				{Queue: process.DefaultQueue, Concurrency: 4},
			},
		},
		HTTP:      jobd.HTTPConfig{MaxBodyBytes: maxBody, PollInterval: 5 * time.Millisecond},
		Processes: []process.Namespace{{Name: namespace, Processor: process.ProcessorFunc(countCalls)}},
		Gateway:   jobd.GatewayConfig{Upstreams: []jobd.Upstream{{Name: upstreamName, URL: upURL}}},
		// No pool for the deliveries' queue: what the fuzz subscribes to
		// is queued, never sent.
		Webhooks: jobd.WebhookConfig{CallbackSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", Concurrency: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := server.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tag := r.Header.Get(tagHeader); tag != "" {
			ctx, calls := withCallLog(r.Context())
			n.calls.Store(tag, calls)
			r = r.WithContext(ctx)
		}
		mux.ServeHTTP(w, r)
	}))
	n.URL = srv.URL

	runCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := server.Run(runCtx); err != nil {
			t.Errorf("server: %v", err)
		}
	})
	t.Cleanup(func() {
		stop()
		wg.Wait()
		srv.Close()
		up.Close()
		n.st.Close()
	})
	n.fixtures()
	return n
}

// countCalls is the namespace's processor: it counts the calls of each
// process in its aux state and answers the count.
func countCalls(_ context.Context, req *process.Request) (*process.Response, error) {
	var aux struct {
		N int `json:"n"`
	}
	_ = json.Unmarshal(req.Process.AuxState, &aux)
	aux.N++
	state, _ := json.Marshal(aux)
	return &process.Response{
		Events:   []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"task":%q,"n":%d}`, req.Task, aux.N))},
		AuxState: state, Response: state,
	}, nil
}

// fixtures creates the credentials through the API.
func (n *node) fixtures() {
	t := n.t
	t.Helper()
	n.secrets.add(n.creds.admin, n.creds.upstreamPasswd)
	key := func(scope string) (string, string) {
		var k api.Key
		n.mustJSON("POST", "/api/v1/keys", `{"name":"fixture `+scope+`","scopes":["`+scope+`"]}`, 201, &k)
		n.secrets.addKey(k.Key)
		return k.Key, k.ID
	}
	n.creds.submit, _ = key(api.ScopeSubmit)
	n.creds.read, _ = key(api.ScopeRead)
	n.creds.adminKey, _ = key(api.ScopeAdmin)
	n.creds.cancel, _ = key(api.ScopeCancel)
	var lk api.Key
	n.mustJSON("POST", "/api/v1/keys", `{"name":"fixture limited","scopes":["submit","read","cancel"],"queues":`+limitedQueues+`}`, 201, &lk)
	n.secrets.addKey(lk.Key)
	n.creds.limited = lk.Key
	var id string
	n.creds.revoked, id = key(api.ScopeAdmin)
	n.mustJSON("DELETE", "/api/v1/keys/"+id, "", 204, nil)

	worker := func(name string) (string, string) {
		var w api.WorkerCreated
		n.mustJSON("POST", "/api/v1/workers", `{"name":"`+name+`","capabilities":["gpu"]}`, 201, &w)
		n.secrets.addKey(w.APIKey)
		return w.APIKey, w.WorkerID
	}
	n.creds.worker, n.creds.workerID = worker("fixture worker")
	var lw api.WorkerCreated
	n.mustJSON("POST", "/api/v1/workers", `{"name":"fixture limited worker","queues":["`+workQueue+`"]}`, 201, &lw)
	n.secrets.addKey(lw.APIKey)
	n.creds.limitedWorker = lw.APIKey
	n.creds.disabledWorker, n.creds.disabledID = worker("fixture disabled worker")
	n.mustJSON("POST", "/api/v1/workers/"+n.creds.disabledID+"/disable", "", 200, nil)
}

// request is one request a test sends.
type request struct {
	method, path string // path is escaped, with its query
	body         []byte
	noBody       bool // no body at all (GET, DELETE)
	header       http.Header
	cred         string // the Authorization value; "" for none
}

// answer is what came back.
type answer struct {
	status int
	header http.Header
	body   []byte
	calls  []string // the store calls the request made
	held   bool     // still running when the client gave up (a long-poll)
}

// send sends req and reads its answer. A Server-Sent Events stream is
// closed once its headers came; a request still unanswered after wait is
// given up (answer.held).
func (n *node) send(req request, wait time.Duration) (*answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var body io.Reader
	if !req.noBody {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, n.URL+req.path, body)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", req.method, req.path, err)
	}
	for k, vs := range req.header {
		hr.Header[k] = vs
	}
	if req.cred != "" {
		hr.Header.Set("Authorization", req.cred)
	}
	tag := fmt.Sprint(n.seq.Add(1))
	hr.Header.Set(tagHeader, tag)
	defer n.calls.Delete(tag)
	resp, err := n.client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return &answer{held: true, calls: n.callsOf(tag)}, nil
		}
		return nil, fmt.Errorf("%s %s: %w", req.method, req.path, err)
	}
	defer resp.Body.Close()
	a := &answer{status: resp.StatusCode, header: resp.Header}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		a.body, err = io.ReadAll(resp.Body)
		if err != nil && ctx.Err() != nil {
			a.held = true
		} else if err != nil {
			return nil, fmt.Errorf("%s %s: read: %w", req.method, req.path, err)
		}
	}
	a.calls = n.callsOf(tag)
	return a, nil
}

func (n *node) callsOf(tag string) []string {
	if l, ok := n.calls.Load(tag); ok {
		return l.(*callLog).list()
	}
	return nil
}

// mustJSON sends a request with the admin secret, requires status and
// decodes the answer into v (when not nil).
func (n *node) mustJSON(method, path, body string, status int, v any) {
	n.t.Helper()
	req := request{method: method, path: path, body: []byte(body), noBody: body == "", cred: "Bearer " + n.creds.admin,
		header: http.Header{"Content-Type": {"application/json"}}}
	a, err := n.send(req, 30*time.Second)
	if err != nil {
		n.t.Fatal(err)
	}
	if a.status != status {
		n.t.Fatalf("%s %s: status %d, want %d: %s", method, path, a.status, status, a.body)
	}
	if v != nil {
		if err := json.Unmarshal(a.body, v); err != nil {
			n.t.Fatalf("%s %s: decode %s: %v", method, path, a.body, err)
		}
	}
}

// syncBuffer is a log sink safe for the node's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// from returns what was written from offset on, and the new offset.
func (b *syncBuffer) from(offset int) (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()[offset:], b.buf.Len()
}
