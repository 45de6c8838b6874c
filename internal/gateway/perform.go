package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jobd/jobd/engine"
)

// maxRetryAfter caps how long an upstream's Retry-After may hold a job.
const maxRetryAfter = time.Hour

// drainLimit is how much of a discarded body is read so that its
// connection can serve another call; beyond it the connection is closed.
const drainLimit = 256 << 10

// perform is the handler of Kind: it sends the request upstream and
// returns the response. A 429 or 503 with a Retry-After of a delay to
// come throttles the upstream for it (overloaded): the job is queued
// again then, its attempt not counted, and no other request to that
// upstream starts before (engine.Throttle, by partition: see
// ThrottleByUpstream). Any other 5xx, a connection error or a timeout is
// a retryable error (a 5xx's Retry-After is honoured); a response body
// over MaxResponseBytes is a permanent one; any other answer, 4xx
// included, is the result.
func (g *Gateway) perform(ctx context.Context, j *engine.Job[Request]) (Response, error) {
	req := &j.Args
	up := g.upstreams[req.Upstream]
	if up == nil {
		return Response{}, engine.Permanent(fmt.Errorf("upstream %q is not configured on node %s", req.Upstream, g.node))
	}
	ctx, stop := context.WithTimeoutCause(ctx, up.Timeout, errTimeout)
	defer stop()

	what := fmt.Sprintf("upstream %q: %s %s", up.Name, req.Method, pathOnly(req.Path))
	t, err := up.target(req.Path)
	if err != nil {
		return Response{}, engine.Permanent(fmt.Errorf("%s: bad path: %w", what, err))
	}
	out, err := http.NewRequestWithContext(ctx, req.Method, t.String(), bytes.NewReader(req.Body))
	if err != nil {
		return Response{}, engine.Permanent(fmt.Errorf("%s: %w", what, scrub(err)))
	}
	out.Header = req.Header.Clone()
	if out.Header == nil {
		out.Header = http.Header{}
	}
	dropHopHeaders(out.Header)
	up.setUser(out.Header)
	// The upstream call is part of the execution's span (the caller's
	// trace when it sent a traceparent).
	g.cfg.Tracer.Inject(ctx, out.Header)
	if len(req.Body) == 0 {
		out.Body, out.GetBody, out.ContentLength = http.NoBody, nil, 0
	}

	began := g.clock.Now()
	resp, err := g.client.Do(out)
	if err != nil {
		g.cfg.Observer.UpstreamCall(up.Name, 0, g.clock.Now().Sub(began))
		return Response{}, callError(ctx, what, up, err)
	}
	g.cfg.Observer.UpstreamCall(up.Name, resp.StatusCode, g.clock.Now().Sub(began))
	defer resp.Body.Close()
	wait, waitOK := retryAfter(resp.Header.Get("Retry-After"), g.clock.Now())
	if overloaded(resp.StatusCode) && wait > 0 {
		drain(resp.Body)
		err := fmt.Errorf("%s: the upstream answered %s with Retry-After %s: its requests wait that long",
			what, resp.Status, wait)
		return Response{}, engine.Throttle(err, wait)
	}
	if resp.StatusCode >= 500 {
		drain(resp.Body)
		err := fmt.Errorf("%s: the upstream answered %s", what, resp.Status)
		if waitOK {
			return Response{}, engine.RetryAfter(err, wait)
		}
		return Response{}, err
	}
	res := Response{Status: resp.StatusCode, Header: responseHeader(resp.Header)}
	if !req.Store {
		drain(resp.Body)
		return res, nil
	}
	limit := g.cfg.MaxResponseBytes
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return Response{}, callError(ctx, what, up, err)
	}
	if int64(len(body)) > limit {
		return Response{}, engine.Permanent(fmt.Errorf("%s: the response body is over the %d-byte limit of a stored response (--async-max-response)", what, limit))
	}
	res.Body = body
	return res, nil
}

// overloaded reports whether an upstream's status says it is overloaded
// (RFC 9110 15.6.4, RFC 6585 4): with a Retry-After, its requests wait.
func overloaded(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// callError explains a failed call: a timeout, a cancel (whose cause the
// engine reads from its own context), or a connection error. Each is
// retryable; the message never holds the query string.
func callError(ctx context.Context, what string, up *upstream, err error) error {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, errTimeout) {
			return fmt.Errorf("%s: no answer within %s: %w", what, up.Timeout, cause)
		}
		return fmt.Errorf("%s: %w", what, cause)
	}
	return fmt.Errorf("%s: %w", what, scrub(err))
}

// scrub drops the *url.Error around err: its message repeats the URL,
// query string included, which may carry secrets.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// pathOnly is path without its query string, for messages.
func pathOnly(p string) string {
	p, _, _ = strings.Cut(p, "?")
	if p == "" {
		return "/"
	}
	return p
}

func drain(body io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit)) }

// retryAfter reads a Retry-After header: seconds or an HTTP date, capped
// at maxRetryAfter.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = max(at.Sub(now), 0)
	} else {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}
