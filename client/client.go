// Package client is the Go SDK of jobd's HTTP API v1: submit jobs, read
// them, wait for them with live progress, cancel, retry and list them;
// call durable processes (InitProcess, CallProcess, RepairProcess,
// GetProcess, ListProcesses, DeleteProcess); manage queues, API keys and
// workers; and run remote workers (NewWorker, Handle).
//
// Errors of the server are *Error values carrying its problem document.
// errors.Is matches them to the sentinels (ErrNotFound, ErrConflict,
// ErrUnavailable, ErrUpstream…) by the problem's type, read from the same
// table the server answers by (api.ProblemKinds); IsRetryable says
// whether sending a request again later can help.
//
// The package is light. It lives in the root module, github.com/jobd/jobd
// (one module: a program that embeds the engine needs no replace nor tag
// of a second one), and imports only the standard library,
// github.com/google/uuid and the wire types of package api, which import
// nothing of the server: a remote worker or an HTTP caller built with it
// compiles no PostgreSQL or SQLite driver and no server package. The
// package's tests prove it under go test ./...: they run go list -deps on
// client and api, and build a program that uses the client in a scratch
// module outside the repository (require github.com/jobd/jobd with a
// replace to the checkout, go mod tidy, go build), checking its package
// list.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jobd/jobd/api"
)

// DefaultMaxIdleConnsPerHost is how many idle connections to the server
// the default HTTP client of New keeps for reuse (http.DefaultClient
// keeps 2: concurrent requests beyond that open a connection each and
// leave it in TIME_WAIT). A Worker whose Concurrency is larger keeps as
// many as its Concurrency.
const DefaultMaxIdleConnsPerHost = 64

// Client talks to one jobd server. It is safe for concurrent use.
type Client struct {
	base *url.URL
	key  string
	http *http.Client
	// ownTransport: http is New's own client (no WithHTTPClient), whose
	// *http.Transport the client may clone with more idle connections
	// (withIdleConns).
	ownTransport bool
	// noRetry turns off the retries of answers 503 (WithoutRetries).
	noRetry bool
	// tls, when set, is the TLS configuration of the client's transport
	// (WithCACert, WithTLSConfig).
	tls *tls.Config
	// optErr is the first error of an option, returned by New.
	optErr error
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client send its requests with hc instead of
// its own (an http.Client without a timeout whose Transport, a clone of
// http.DefaultTransport, keeps DefaultMaxIdleConnsPerHost idle
// connections to the server). Do not give hc a Timeout shorter than your
// longest Wait: streams and long-polls are held open. Give its Transport
// enough idle connections per host for the requests you send at once.
// With WithCACert or WithTLSConfig too, hc's Transport must be an
// *http.Transport (it is cloned, with that TLS configuration) or nil.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http, c.ownTransport = hc, false }
}

// WithoutRetries makes every request fail at once with the server's
// answer 503 (unavailable: its database does not answer; busy: too many
// pending requests) instead of sending it again after the answer's
// Retry-After, until the request's context ends, as the client does by
// default.
func WithoutRetries() Option {
	return func(c *Client) { c.noRetry = true }
}

// WithTLSConfig makes the client speak TLS to an https:// server with
// cfg (cloned), for a private CA (RootCAs), a client certificate, or a
// server name of its own.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *Client) { c.tls = cfg.Clone() }
}

// WithCACert makes the client trust the certificates of an https://
// server signed by the CA certificates in pem (PEM-encoded), instead of
// the system's roots: for a server whose certificate a private CA signed.
func WithCACert(pem []byte) Option {
	return func(c *Client) {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			c.optErr = errors.New("jobd client: the CA certificate holds no PEM certificate")
			return
		}
		c.tls = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
}

// New returns a client of the server at baseURL (e.g.
// "http://127.0.0.1:8080", or "https://jobd.internal:8443" for a server
// that serves TLS), presenting key (an API key or the admin secret; empty
// for an open server) as a bearer credential.
func New(baseURL, key string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("jobd client: server URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("jobd client: server URL %q: want http://host:port or https://host:port", baseURL)
	}
	c := &Client{base: u, key: key, http: &http.Client{Transport: newTransport(DefaultMaxIdleConnsPerHost)}, ownTransport: true}
	for _, o := range opts {
		o(c)
	}
	if c.optErr != nil {
		return nil, c.optErr
	}
	if c.tls != nil {
		if err := c.useTLS(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newTransport is a clone of http.DefaultTransport that keeps idle
// connections to a host for reuse.
func newTransport(idle int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = idle
	t.MaxIdleConns = max(t.MaxIdleConns, idle)
	return t
}

// withIdleConns returns c, or, when c uses its own transport and that
// keeps fewer than n idle connections per host, a copy of c whose own
// transport keeps n (for a Worker of Concurrency n).
func (c *Client) withIdleConns(n int) *Client {
	t, ok := c.http.Transport.(*http.Transport)
	if !c.ownTransport || !ok || t.MaxIdleConnsPerHost >= n {
		return c
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = n
	t.MaxIdleConns = max(t.MaxIdleConns, n)
	cp := *c
	hc := *c.http
	hc.Transport = t
	cp.http = &hc
	return &cp
}

// useTLS gives the client's HTTP client a transport with c.tls.
func (c *Client) useTLS() error {
	var t *http.Transport
	switch rt := c.http.Transport.(type) {
	case nil:
		t = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		t = rt.Clone()
	default:
		return fmt.Errorf("jobd client: a TLS configuration needs an *http.Transport, the HTTP client has a %T", rt)
	}
	t.TLSClientConfig = c.tls
	hc := *c.http
	hc.Transport = t
	c.http = &hc
	return nil
}

// Sentinel errors an *Error matches with errors.Is. The server's answer
// is classified by its problem type (api.ClassOf reads the table
// api.ProblemKinds that the server answers by), and only by its status
// when the body is not a problem document of a type jobd defines (a
// proxy's error page, an older server).
var (
	// ErrInvalid: the request was refused as malformed or breaking a rule
	// (400, 405, 413, 415, 422); Error.Problem.Field names the field.
	ErrInvalid = errors.New("invalid request")
	// ErrUnauthorized: missing or wrong credentials (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the key lacks the scope (403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: no such job, key, process or route (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the state of the job, process or lease does not allow
	// the operation (409; 410 for a canceled async request). A lost lease
	// also matches ErrLeaseLost.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: retry later. The database does not answer, the
	// server is too busy (503 with Retry-After, see Error.RetryAfter), a
	// cap on open event streams was reached (429 too-many-requests, with
	// Retry-After), or a proxy in front of it answered 429, 502, 503 or
	// 504 without a problem document.
	ErrUnavailable = errors.New("unavailable")
	// ErrUpstream: a service jobd called for the request failed: a
	// process's processor (the process is now in error until a repair)
	// or the async gateway's upstream (502, 504). Not transient: do not
	// send the same request again as is.
	ErrUpstream = errors.New("upstream failed")
	// ErrTaskTimeout: a process task was still queued or running when the
	// call's timeout passed (504); the error is a *TaskTimeoutError that
	// names the task, which is not lost.
	ErrTaskTimeout = errors.New("task still pending")
	// ErrInternal: the server failed (500); the cause is in its log.
	ErrInternal = errors.New("internal server error")
	// ErrIdempotencyMismatch: the idempotency key was used before with a
	// different request (422 idempotency-mismatch); nothing was written
	// and the answer says nothing of the job the key names. Send the
	// same request again, or use a new key. It also matches ErrInvalid.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
)

// classErrors are the sentinels of the problem classes.
var classErrors = map[api.ProblemClass]error{
	api.ClassInvalid:      ErrInvalid,
	api.ClassUnauthorized: ErrUnauthorized,
	api.ClassForbidden:    ErrForbidden,
	api.ClassNotFound:     ErrNotFound,
	api.ClassConflict:     ErrConflict,
	api.ClassUnavailable:  ErrUnavailable,
	api.ClassUpstream:     ErrUpstream,
	api.ClassPending:      ErrTaskTimeout,
	api.ClassInternal:     ErrInternal,
}

// Error is an error answer of the server, with its problem document.
type Error struct {
	StatusCode int
	Problem    api.Problem
	// RetryAfter is the answer's Retry-After delay; 0 when it had none.
	RetryAfter time.Duration
}

// Error describes the answer: its status, detail and field.
func (e *Error) Error() string {
	msg := fmt.Sprintf("jobd: %d %s", e.StatusCode, e.Problem.Error())
	if e.Problem.Field != "" && !strings.Contains(e.Problem.Detail, e.Problem.Field) {
		msg += " (field " + e.Problem.Field + ")"
	}
	return msg
}

// Is matches the sentinel of e's class (see the sentinels), ErrLeaseLost
// for a worker's lost lease and ErrIdempotencyMismatch for a key reused
// with another request.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrLeaseLost:
		return e.Problem.Type == api.ProblemLeaseLost
	case ErrIdempotencyMismatch:
		return e.Problem.Type == api.ProblemIdempotencyMismatch
	}
	s, ok := classErrors[api.ClassOf(e.Problem.Type, e.StatusCode)]
	return ok && s == target
}

// IsRetryable reports whether the request that failed with err may
// succeed if sent again later, unchanged: the server answered that it is
// unavailable for now (ErrUnavailable; wait Error.RetryAfter), or the
// request got no answer at all (the connection was refused or broke). It
// is false for every other answer, and when the caller's context ended.
// A request that is not idempotent (Submit without an idempotency key,
// CallProcess without TaskOptions.IdempotencyKey) may have been carried
// out when its connection broke, or when the server's database went away
// as it committed (503). The client itself sends a request answered 503
// again until its context ends, unless made WithoutRetries: an error
// matching ErrUnavailable then means that the context ended first.
func IsRetryable(err error) bool {
	var e *Error
	var ue *url.Error
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &e):
		return errors.Is(e, ErrUnavailable)
	}
	return errors.As(err, &ue)
}

// request builds a request of path (under the base URL) with query and a
// JSON body (nil for none).
func (c *Client) request(ctx context.Context, method, path string, query url.Values, body any) (*http.Request, error) {
	// path is escaped (its segments went through url.PathEscape): keep it
	// as it is, so that an id holding "/" or "%" stays one segment.
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
	unescaped, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("jobd client: path %q: %w", path, err)
	}
	u.Path = unescaped
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("jobd client: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("jobd client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "jobd-client")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return req, nil
}

// do sends a request and decodes a 2xx JSON answer into out (nil to
// discard it). It returns the answer's status and header.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) (int, http.Header, error) {
	return c.doWith(ctx, method, path, query, nil, body, out)
}

// Delays between the retries of a request answered 503 without a
// Retry-After: doubling from retryMin up to retryMax. A Retry-After is
// obeyed up to maxRetryAfter.
const (
	retryMin      = 250 * time.Millisecond
	retryMax      = 5 * time.Second
	maxRetryAfter = time.Minute
)

// doWith is do with extra request headers. A request answered 503 (the
// server's database does not answer, or it is too busy) is sent again
// after the answer's Retry-After, or a growing delay, until it gets
// another answer or ctx ends (see WithoutRetries).
func (c *Client) doWith(ctx context.Context, method, path string, query url.Values, hdr http.Header, body, out any) (int, http.Header, error) {
	delay := retryMin
	for {
		status, h, err := c.send(ctx, method, path, query, hdr, body, out)
		var e *Error
		if c.noRetry || !errors.As(err, &e) || e.StatusCode != http.StatusServiceUnavailable || !errors.Is(e, ErrUnavailable) {
			return status, h, err
		}
		wait := delay
		if e.RetryAfter > 0 {
			wait = min(e.RetryAfter, maxRetryAfter)
		}
		if sleep(ctx, wait) != nil {
			return status, h, err // the answer, not the context's end
		}
		delay = min(2*delay, retryMax)
	}
}

// drainLimit bounds what send reads of an answer past what it decodes,
// to let the connection be reused; a longer rest closes it.
const drainLimit = 64 << 10

// send sends one request and decodes a 2xx JSON answer into out.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, hdr http.Header, body, out any) (int, http.Header, error) {
	req, err := c.request(ctx, method, path, query, body)
	if err != nil {
		return 0, nil, err
	}
	for name, vs := range hdr {
		req.Header[name] = vs
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("jobd client: %s %s: %w", method, path, err)
	}
	defer func() {
		// Read to the end (the newline after the JSON value), so that the
		// connection goes back to the pool to be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		resp.Body.Close()
	}()
	if resp.StatusCode >= 300 {
		return resp.StatusCode, resp.Header, readError(resp)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, resp.Header, fmt.Errorf("jobd client: %s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, resp.Header, nil
}

// readError turns an error answer into an *Error, with a problem made up
// from the status when the body is not a problem document. A process
// task's timeout is a *TaskTimeoutError.
func readError(resp *http.Response) error {
	e := &Error{StatusCode: resp.StatusCode}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &e.Problem) != nil || e.Problem.Status == 0 {
		e.Problem = api.Problem{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: strings.TrimSpace(string(b))}
	}
	if e.Problem.Type == api.ProblemTaskTimeout {
		var doc api.ProcessTaskTimeout
		if json.Unmarshal(b, &doc) == nil {
			return &TaskTimeoutError{TaskID: doc.TaskID, State: doc.State, Err: e}
		}
	}
	return e
}
