package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// front stands between the test's HTTP callers and the three nodes, as a
// load balancer would: the submitting clients, the Go SDK workers and the
// harness call through it directly (its RoundTripper), and the `jobd
// worker` processes through its reverse proxy. Each request goes to a
// node picked at random, or to another one when that node refuses the
// connection (nothing was sent, so nothing can have happened); any other
// failure reaches the caller as it is, a transport error.
//
// The front is also where the callers' records of their answers come
// from: it logs every exchange — who sent it, the route, the job and the
// lease token it named, the node, and the answer (status and problem
// type, the claimed jobs, the leases a heartbeat lost) or the transport
// error — as the caller itself saw it.
type front struct {
	nodes     []string // host:port
	transport *http.Transport

	mu          sync.Mutex
	log         []exchange
	partitioned map[string]bool
}

// exchange is one request and its answer, as the caller saw them.
type exchange struct {
	who   string // "client", "harness", "go-2", "exec-1.3"…
	route route
	job   uuid.UUID // of a worker's job route
	token uuid.UUID // the lease token it presented
	node  string
	sent  time.Time
	// done is when the answer, or the transport error, came.
	done time.Time
	// status is the answer's, 0 when none came; err is then the
	// transport error.
	status  int
	problem string // an error answer's problem type
	detail  string
	err     string
	// claimed are the jobs a claim was handed; lost the leases (their
	// tokens) a heartbeat was told it no longer holds.
	claimed []claimed
	lost    []uuid.UUID
	// beat are the leases a heartbeat presented, by job.
	beat map[uuid.UUID]uuid.UUID
	// repeat: an outcome answered 2xx as the repeat of the one applied
	// before (its first answer was lost; nothing changed).
	repeat bool
	// items are the outcomes of a batch (POST /api/v1/worker/outcomes),
	// which record splits into an exchange each, with its answer.
	items   []api.OutcomeItem
	answers []api.OutcomeAnswer
}

// claimed is a job as a claim handed it to a worker.
type claimed struct {
	id      uuid.UUID
	attempt int
	token   uuid.UUID
	lockKey string
}

// route names what a request is for.
type route string

// The routes the checks and figures tell apart.
const (
	routeSubmit     route = "submit"
	routeClaim      route = "claim"
	routeHeartbeat  route = "heartbeat"
	routeComplete   route = "complete"
	routeFail       route = "fail"
	routeRelease    route = "release"
	routeProgress   route = "progress"
	routeCheckpoint route = "checkpoint"
	routeOutcomes   route = "outcomes" // a batch, recorded as its outcomes
	routeOther      route = "other"
)

// outcomeRoutes are the routes of a batch's outcomes.
var outcomeRoutes = map[string]route{
	api.OutcomeComplete: routeComplete, api.OutcomeFail: routeFail, api.OutcomeRelease: routeRelease,
}

// outcome reports whether r reports a job's outcome.
func (r route) outcome() bool {
	return r == routeComplete || r == routeFail || r == routeRelease
}

// errPartitioned is the transport error of a caller cut off from every
// node by a partition fault.
var errPartitioned = errors.New("chaos: network partition (no route to any node)")

func newFront(nodes []string) *front {
	return &front{
		nodes: nodes,
		transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
		partitioned: make(map[string]bool),
	}
}

// client returns an HTTP client whose requests go through the front as
// who's.
func (f *front) client(who string) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return f.roundTrip(who, r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return rt(r) }

// partition cuts who off from every node (on) or heals it (off).
func (f *front) partition(who string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partitioned[who] = on
}

// roundTrip sends r to a node on who's behalf and logs the exchange.
func (f *front) roundTrip(who string, r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	ex := exchange{who: who, sent: time.Now()}
	ex.route, ex.job = routeOf(r.Method, r.URL.Path)
	switch {
	case ex.job != uuid.Nil:
		var lease struct {
			LeaseToken uuid.UUID `json:"lease_token"`
		}
		_ = json.Unmarshal(body, &lease)
		ex.token = lease.LeaseToken
	case ex.route == routeHeartbeat:
		var hb api.HeartbeatRequest
		if json.Unmarshal(body, &hb) == nil && len(hb.Leases) > 0 {
			ex.beat = make(map[uuid.UUID]uuid.UUID, len(hb.Leases))
			for _, l := range hb.Leases {
				ex.beat[l.ID] = l.LeaseToken
			}
		}
	case ex.route == routeOutcomes:
		var or api.OutcomesRequest
		_ = json.Unmarshal(body, &or)
		ex.items = or.Outcomes
	}
	f.mu.Lock()
	cut := f.partitioned[who]
	f.mu.Unlock()
	if cut {
		ex.err = errPartitioned.Error()
		f.record(ex)
		return nil, errPartitioned
	}
	var (
		resp *http.Response
		err  error
	)
	for _, i := range rand.Perm(len(f.nodes)) {
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.Host = "http", f.nodes[i], ""
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if body == nil {
			out.Body = nil
		}
		ex.node = f.nodes[i]
		resp, err = f.transport.RoundTrip(out)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
	}
	if err != nil {
		ex.err = err.Error()
		f.record(ex)
		return nil, err
	}
	ex.status = resp.StatusCode
	if resp.StatusCode >= 300 || ex.route == routeClaim || ex.route == routeHeartbeat || ex.route == routeOutcomes || ex.route.outcome() {
		// Small answers: read whole, and handed on as read.
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if rerr != nil {
			// The answer broke mid-body: the caller sees that too.
			ex.status, ex.err = 0, rerr.Error()
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{rerr}))
		}
		ex.read(b)
	}
	f.record(ex)
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// read fills in what the answer body b says.
func (ex *exchange) read(b []byte) {
	switch {
	case ex.route == routeOutcomes:
		ex.readOutcomes(b)
	case ex.status >= 300:
		var p api.Problem
		if json.Unmarshal(b, &p) == nil && p.Type != "" {
			ex.problem, ex.detail = p.Type, p.Detail
		} else {
			ex.detail = strings.TrimSpace(string(b))
		}
	case ex.status == 0:
	case ex.route == routeClaim:
		var cr api.ClaimResponse
		if json.Unmarshal(b, &cr) == nil {
			for _, j := range cr.Jobs {
				ex.claimed = append(ex.claimed, claimed{id: j.ID, attempt: j.Attempt, token: j.LeaseToken, lockKey: j.LockKey})
			}
		}
	case ex.route.outcome():
		var fr api.FinishResponse
		if json.Unmarshal(b, &fr) == nil {
			ex.repeat = fr.Repeat
		}
	case ex.route == routeHeartbeat:
		var hr api.HeartbeatResponse
		if json.Unmarshal(b, &hr) == nil {
			for _, l := range hr.Leases {
				if !l.Held {
					ex.lost = append(ex.lost, ex.beat[l.ID])
				}
			}
		}
	}
}

// readOutcomes keeps a batch's answer: its problem as a whole, or each
// outcome's answer (items then answered; answer for their status).
func (ex *exchange) readOutcomes(b []byte) {
	if ex.status >= 300 {
		var p api.Problem
		if json.Unmarshal(b, &p) == nil && p.Type != "" {
			ex.problem, ex.detail = p.Type, p.Detail
		}
		return
	}
	var res api.OutcomesResponse
	if json.Unmarshal(b, &res) != nil || len(res.Outcomes) != len(ex.items) {
		ex.status, ex.err = 0, "an outcomes answer that does not answer each outcome"
		return
	}
	ex.answers = res.Outcomes
}

func (f *front) record(ex exchange) {
	ex.done = time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if ex.route != routeOutcomes {
		f.log = append(f.log, ex)
		return
	}
	// A batch of outcomes is recorded as one exchange per outcome, each
	// with its own answer, as if it had gone to its own route.
	for i, it := range ex.items {
		one := ex
		one.items, one.answers = nil, nil
		one.route, one.job, one.token = outcomeRoutes[it.Outcome], it.ID, it.LeaseToken
		if one.route == "" {
			one.route = routeOther
		}
		if ex.answers != nil {
			a := ex.answers[i]
			one.status, one.repeat = a.Status, a.Repeat
			if a.Problem != nil {
				one.problem, one.detail = a.Problem.Type, a.Problem.Detail
			}
		}
		f.log = append(f.log, one)
	}
}

// exchanges returns a copy of the log.
func (f *front) exchanges() []exchange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]exchange(nil), f.log...)
}

// routeOf names the route of a request, and the job of a worker's job
// route.
func routeOf(method, path string) (route, uuid.UUID) {
	switch {
	case method == http.MethodPost && path == "/api/v1/jobs":
		return routeSubmit, uuid.Nil
	case path == "/api/v1/worker/claim":
		return routeClaim, uuid.Nil
	case path == "/api/v1/worker/heartbeat":
		return routeHeartbeat, uuid.Nil
	case path == "/api/v1/worker/outcomes":
		return routeOutcomes, uuid.Nil
	}
	rest, ok := strings.CutPrefix(path, "/api/v1/worker/jobs/")
	if !ok {
		return routeOther, uuid.Nil
	}
	idText, action, _ := strings.Cut(rest, "/")
	id, err := uuid.Parse(idText)
	if err != nil {
		return routeOther, uuid.Nil
	}
	switch r := route(action); r {
	case routeComplete, routeFail, routeRelease, routeProgress, routeCheckpoint:
		return r, id
	}
	return routeOther, uuid.Nil
}

// whoKey carries the caller's name from the proxy to the front.
type whoKey struct{}

// serveProxy serves the front to the `jobd worker` processes: a worker
// named who uses the server URL base+"/w/"+who. A request the front
// could not send ends with its connection cut, so that the worker sees
// the transport error it would have seen talking to a node itself.
func (f *front) serveProxy(t *testing.T) (base string) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			rest := strings.TrimPrefix(pr.In.URL.Path, "/w/")
			who, path, _ := strings.Cut(rest, "/")
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "jobd.chaos"
			pr.Out.URL.Path, pr.Out.URL.RawPath = "/"+path, ""
			pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), whoKey{}, who))
		},
		Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			who, _ := r.Context().Value(whoKey{}).(string)
			return f.roundTrip(who, r)
		}),
		ErrorHandler: func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) },
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	srv := httptest.NewUnstartedServer(rp)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}
