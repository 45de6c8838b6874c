package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
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
		g.results(w, r, "/api/v1/async", g.writeError)
	})
}

// asyncMode is what the caller asked of a forwarded request.
type asyncMode int

const (
	modeSync   asyncMode = iota
	modeForget           // X-Async: true
	modeStore            // X-Async: store
)

// readMode reads X-Async and x-arango-async; they must agree. X-Async is
// jobd's: a value other than true, store or false is refused (400).
// x-arango-async is ArangoDB's, read as ArangoDB reads it: any value
// other than true or store asks for nothing, and the request runs
// synchronously.
func readMode(h http.Header) (asyncMode, error) {
	mode := modeSync
	for _, name := range []string{headerAsync, headerArangoAsync} {
		var m asyncMode
		switch v := strings.ToLower(strings.TrimSpace(h.Get(name))); v {
		case "true":
			m = modeForget
		case "store":
			m = modeStore
		case "", "false":
			continue
		default:
			if name == headerArangoAsync {
				continue
			}
			return 0, problemf(api.ProblemBadRequest, name, "%s must be true or store, got %q", name, v)
		}
		if mode != modeSync && mode != m {
			return 0, problemf(api.ProblemBadRequest, name, "X-Async and x-arango-async disagree")
		}
		mode = m
	}
	return mode, nil
}

// forward: any method on /gw/NAME/... Its errors, jobd's own answers,
// carry ArangoDB's error members too (writeArangoError).
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request) {
	// The credential first: which upstreams exist is not for a caller
	// without one to learn.
	if err := g.authorize(r, api.ScopeSubmit); err != nil {
		g.writeArangoError(w, r, err)
		return
	}
	name, rest, ok := splitForward(r.URL.EscapedPath())
	up := g.upstreams[name]
	if !ok || up == nil {
		g.writeArangoError(w, r, problemf(api.ProblemNotFound, "", "no upstream %q is configured", name))
		return
	}
	mode, err := readMode(r.Header)
	if err != nil {
		g.writeArangoError(w, r, err)
		return
	}
	if r.URL.RawQuery != "" {
		rest += "?" + r.URL.RawQuery
	}
	// The path is checked on both paths, before anything is queued.
	t, err := up.target(rest)
	if err != nil {
		g.writeArangoError(w, r, err)
		return
	}
	if mode == modeSync {
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
		g.writeArangoError(w, r, err)
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
			setForwarded(pr.Out.Header, pr.In)
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
				g.writeArangoError(w, r, problemf(api.ProblemUpstreamTimeout, "", "upstream %q did not answer within %s", up.Name, up.Timeout))
			case errors.Is(err, os.ErrDeadlineExceeded):
				g.writeArangoError(w, r, errSlowBody) // the caller's body, not the upstream, was too slow
			case r.Context().Err() != nil:
				// The caller went away.
			default:
				g.log.Warn("gateway: upstream call failed", "upstream", up.Name, "method", r.Method, "err", scrub(err))
				g.writeArangoError(w, r, problemf(api.ProblemUpstreamFailed, "", "upstream %q failed: %v", up.Name, scrub(err)))
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
	kind := Kind
	if mode == modeForget {
		kind = KindForget // never listed by GET pending and done, as in ArangoDB
	}
	p := job.InsertParams{Queue: Queue, Kind: kind, Args: args, MaxAttempts: g.cfg.MaxAttempts, PartitionKey: up.Name}
	if tp := r.Header.Get("traceparent"); job.ValidTraceParent(tp) {
		p.TraceParent = tp // the request's execution joins the caller's trace
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if len(key) > maxIdempotencyKey {
			return problemf(api.ProblemBadRequest, "Idempotency-Key", "Idempotency-Key may be at most %d bytes", maxIdempotencyKey)
		}
		p.IdempotencyKey = IdempotencyPrefix + key
		p.IdempotencyFingerprint = requestFingerprint(up.Name, r.Method, rest, body, mode == modeStore)
	}
	if err := g.checkPending(r.Context()); err != nil {
		return err
	}
	res, err := g.store.JobInsertMany(r.Context(), []job.InsertParams{p})
	if errors.Is(err, job.ErrIdempotencyMismatch) {
		return problemf(api.ProblemIdempotencyMismatch, "Idempotency-Key",
			"this Idempotency-Key was used before with a different request (another upstream, method, path, body or async mode); send the same request again, or use a new key")
	}
	if err != nil {
		return err
	}
	j := res[0].Job
	switch {
	case j.Queue != Queue || (j.Kind != Kind && j.Kind != KindForget):
		return problemf(api.ProblemDuplicate, "Idempotency-Key", "this Idempotency-Key names a job that is not an async request")
	case mode == modeStore && j.Kind != Kind:
		return problemf(api.ProblemDuplicate, "Idempotency-Key", "this Idempotency-Key names a fire-and-forget request (X-Async: true), whose response is not kept")
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

// requestFingerprint identifies an async request for its Idempotency-Key
// (job.InsertParams.IdempotencyFingerprint): its upstream, method, path
// with query, body and async mode. The forwarded headers are not part of
// it: two sendings of one request may carry another traceparent, request
// id or client address.
func requestFingerprint(upstream, method, rest string, body []byte, store bool) string {
	h := sha256.New()
	for _, part := range []string{upstream, method, rest, strconv.FormatBool(store)} {
		h.Write([]byte(strconv.Quote(part)))
		h.Write([]byte{0})
	}
	h.Write(body)
	return "gateway:" + hex.EncodeToString(h.Sum(nil))
}

// IdempotencyPrefix starts the idempotency key of every async request
// (then its Idempotency-Key): a namespace of their own, so that a key of a
// job submitted through the API never matches one (no caller may submit
// a key of it: job.ReservedIdempotencyKey).
const IdempotencyPrefix = "gateway:"

// maxIdempotencyKey bounds an async request's Idempotency-Key.
const maxIdempotencyKey = 255 - len(IdempotencyPrefix)

// checkPending refuses a new async request while MaxPending gateway jobs
// (stored and fire-and-forget alike) are queued or running (503 busy,
// with Retry-After). Concurrent submissions may overshoot the limit by
// their number: it is a brake, not an exact quota.
func (g *Gateway) checkPending(ctx context.Context) error {
	res, err := g.store.JobList(ctx, store.ListParams{
		Queue: Queue, States: []job.State{job.StateQueued, job.StateRunning},
	})
	if err != nil {
		return err
	}
	if res.Total >= int64(g.cfg.MaxPending) {
		return problemf(api.ProblemBusy, "", "%d async requests are pending, the most this server queues; retry later", res.Total)
	}
	return nil
}
