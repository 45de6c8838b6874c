package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Handler serves /gw/NAME/... (forwarding) and the ArangoDB-compatible
// result routes under /_api/job/, checking credentials itself. Mount it
// beside the API handler, which serves the same result routes under
// /api/v1/async/ through Results.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/gw/", g.forward)
	mux.HandleFunc("/_api/job", g.compat)
	mux.HandleFunc("/_api/job/", g.compat)
	return mux
}

// Results serves the result routes under /api/v1/async/ WITHOUT checking
// credentials: it is meant for httpapi.Config.Async, whose routes check
// each one's scope first.
func (g *Gateway) Results() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.results(w, r, "/api/v1/async")
	})
}

// asyncMode is what the caller asked of a forwarded request.
type asyncMode int

const (
	modeSync   asyncMode = iota
	modeForget           // X-Async: true
	modeStore            // X-Async: store
)

// readMode reads X-Async and x-arango-async; they must agree.
func readMode(h http.Header) (asyncMode, error) {
	mode := modeSync
	for _, name := range []string{headerAsync, headerArangoAsync} {
		var m asyncMode
		switch v := strings.ToLower(strings.TrimSpace(h.Get(name))); v {
		case "", "false":
			continue
		case "true":
			m = modeForget
		case "store":
			m = modeStore
		default:
			return 0, problemf(api.ProblemBadRequest, name, "%s must be true or store, got %q", name, v)
		}
		if mode != modeSync && mode != m {
			return 0, problemf(api.ProblemBadRequest, name, "X-Async and x-arango-async disagree")
		}
		mode = m
	}
	return mode, nil
}

// forward: any method on /gw/NAME/...
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request) {
	// The credential first: which upstreams exist is not for a caller
	// without one to learn.
	if err := g.authorize(r, api.ScopeSubmit); err != nil {
		g.writeError(w, r, err)
		return
	}
	name, rest, ok := splitForward(r.URL.EscapedPath())
	up := g.upstreams[name]
	if !ok || up == nil {
		g.writeError(w, r, problemf(api.ProblemNotFound, "", "no upstream %q is configured", name))
		return
	}
	mode, err := readMode(r.Header)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	if r.URL.RawQuery != "" {
		rest += "?" + r.URL.RawQuery
	}
	if mode == modeSync {
		t, err := up.target(rest)
		if err != nil {
			g.writeError(w, r, problemf(api.ProblemBadRequest, "", "bad path: %v", err))
			return
		}
		ctx, cancel := context.WithTimeoutCause(r.Context(), up.Timeout, errTimeout)
		defer cancel()
		// The upstream's answer may come later than the server's write
		// timeout (http.Server.WriteTimeout); a slow request body is still
		// cut by its read timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(up.Timeout + answerMargin))
		call := &proxyCall{target: t, began: g.clock.Now()}
		up.proxy.ServeHTTP(w, r.WithContext(context.WithValue(ctx, targetKey{}, call)))
		return
	}
	if err := g.submit(w, r, up, rest, mode); err != nil {
		g.writeError(w, r, err)
	}
}

func (g *Gateway) authorize(r *http.Request, scope string) error {
	if g.cfg.Authorizer == nil {
		return nil
	}
	return g.cfg.Authorizer.Authorize(r, scope)
}

// targetKey carries a synchronous request's *proxyCall to the proxy.
type targetKey struct{}

// proxyCall is a synchronous call: its upstream URL and its start.
type proxyCall struct {
	target *url.URL
	began  time.Time
}

// errSlowBody answers a request whose body did not come within the
// server's read timeout (http.Server.ReadTimeout).
var errSlowBody = problemf(api.ProblemBadRequest, "", "the request body did not arrive within the server's read timeout")

// answerMargin is what a synchronous call's write deadline gives the
// answer beyond its upstream's timeout.
const answerMargin = 30 * time.Second

// errTimeout is the cause of an upstream call's context when its timeout
// passed.
var errTimeout = errors.New("upstream timeout")

// newProxy returns the synchronous path to up: a reverse proxy that
// streams both ways, drops hop-by-hop headers and answers its own
// failures as problems.
func (g *Gateway) newProxy(up *upstream) http.Handler {
	authOn := g.cfg.Authorizer != nil
	return &httputil.ReverseProxy{
		Transport: g.cfg.Transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := *pr.In.Context().Value(targetKey{}).(*proxyCall).target
			pr.Out.URL = &t
			pr.Out.Host = ""
			pr.SetXForwarded()
			pr.Out.Header.Del(headerAsync)
			pr.Out.Header.Del(headerArangoAsync)
			if authOn {
				pr.Out.Header.Del("Authorization")
			}
			up.setUser(pr.Out.Header)
		},
		ModifyResponse: func(resp *http.Response) error {
			call := resp.Request.Context().Value(targetKey{}).(*proxyCall)
			g.cfg.Observer.UpstreamCall(up.Name, resp.StatusCode, g.clock.Now().Sub(call.began))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if call, ok := r.Context().Value(targetKey{}).(*proxyCall); ok {
				g.cfg.Observer.UpstreamCall(up.Name, 0, g.clock.Now().Sub(call.began))
			}
			switch {
			case errors.Is(context.Cause(r.Context()), errTimeout):
				g.writeError(w, r, problemf(api.ProblemUpstreamTimeout, "", "upstream %q did not answer within %s", up.Name, up.Timeout))
			case errors.Is(err, os.ErrDeadlineExceeded):
				g.writeError(w, r, errSlowBody) // the caller's body, not the upstream, was too slow
			case r.Context().Err() != nil:
				// The caller went away.
			default:
				g.log.Warn("gateway: upstream call failed", "upstream", up.Name, "method", r.Method, "err", scrub(err))
				g.writeError(w, r, problemf(api.ProblemUpstreamFailed, "", "upstream %q failed: %v", up.Name, scrub(err)))
			}
		},
	}
}

// submit queues an async request and answers 202.
func (g *Gateway) submit(w http.ResponseWriter, r *http.Request, up *upstream, rest string, mode asyncMode) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return problemf(api.ProblemTooLarge, "", "an async request body may be at most %d bytes", tooLarge.Limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Before the context, which net/http cancels with it.
			return errSlowBody
		}
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
		return problemf(api.ProblemBadRequest, "", "reading the request body: %v", err)
	}
	args, err := json.Marshal(Request{
		Upstream: up.Name, Method: r.Method, Path: rest,
		Header: requestHeader(r, g.cfg.Authorizer != nil),
		Body:   body, Store: mode == modeStore,
	})
	if err != nil {
		return err
	}
	if len(args) > g.cfg.MaxArgsBytes {
		return problemf(api.ProblemTooLarge, "", "the request (headers and body) is too large to queue: at most %d bytes", g.cfg.MaxArgsBytes)
	}
	// The upstream is the job's partition: its throttle (429 or 503 with
	// Retry-After) holds back its own requests only (ThrottleByUpstream).
	p := job.InsertParams{Queue: Queue, Kind: Kind, Args: args, MaxAttempts: g.cfg.MaxAttempts, PartitionKey: up.Name}
	if tp := r.Header.Get("traceparent"); job.ValidTraceParent(tp) {
		p.TraceParent = tp // the request's execution joins the caller's trace
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if len(key) > maxIdempotencyKey {
			return problemf(api.ProblemBadRequest, "Idempotency-Key", "Idempotency-Key may be at most %d bytes", maxIdempotencyKey)
		}
		p.IdempotencyKey = idempotencyPrefix + key
	}
	if err := g.checkPending(r.Context()); err != nil {
		return err
	}
	res, err := g.store.JobInsertMany(r.Context(), []job.InsertParams{p})
	if err != nil {
		return err
	}
	j := res[0].Job
	if !ours(j) {
		return problemf(api.ProblemDuplicate, "Idempotency-Key", "this Idempotency-Key names a job that is not an async request")
	}
	if mode == modeStore {
		id := j.ID.String()
		w.Header().Set(headerAsyncID, id)
		w.Header().Set(headerArangoAsyncID, id)
		w.Header().Set("Location", "/api/v1/async/"+id)
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// Idempotency keys of async requests live in a namespace of their own, so
// that a key of a job submitted through the API never matches one.
const (
	idempotencyPrefix = "gateway:"
	maxIdempotencyKey = 255 - len(idempotencyPrefix)
)

// checkPending refuses a new async request while MaxPending gateway jobs
// are queued or running (503 busy, with Retry-After). Concurrent submissions may overshoot the limit
// by their number: it is a brake, not an exact quota.
func (g *Gateway) checkPending(ctx context.Context) error {
	res, err := g.store.JobList(ctx, store.ListParams{
		Queue: Queue, Kind: Kind, States: []job.State{job.StateQueued, job.StateRunning},
	})
	if err != nil {
		return err
	}
	if res.Total >= int64(g.cfg.MaxPending) {
		return problemf(api.ProblemBusy, "", "%d async requests are pending, the most this server queues; retry later", res.Total)
	}
	return nil
}
