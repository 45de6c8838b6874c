package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// sentinels are the client's error classes.
var sentinels = []error{
	client.ErrInvalid, client.ErrUnauthorized, client.ErrForbidden, client.ErrNotFound, client.ErrConflict,
	client.ErrUnavailable, client.ErrUpstream, client.ErrTaskTimeout, client.ErrInternal,
}

// answer is a server (or a proxy in front of one) that answers every
// request with status, content type ct, header Retry-After (when not
// empty) and body.
func answer(t *testing.T, status int, ct, retryAfter, body string) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	// Each case classifies one answer: without retries, a 503 is
	// returned at once.
	c, err := client.New(srv.URL, "", client.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestErrorClassification: every problem kind of the table is matched by
// the sentinel of its class and no other, whatever its status; a body
// that is not a problem document of a known type is classified by its
// status.
func TestErrorClassification(t *testing.T) {
	want := map[api.ProblemClass]error{
		api.ClassInvalid: client.ErrInvalid, api.ClassUnauthorized: client.ErrUnauthorized,
		api.ClassForbidden: client.ErrForbidden, api.ClassNotFound: client.ErrNotFound,
		api.ClassConflict: client.ErrConflict, api.ClassUnavailable: client.ErrUnavailable,
		api.ClassUpstream: client.ErrUpstream, api.ClassPending: client.ErrTaskTimeout,
		api.ClassInternal: client.ErrInternal,
	}
	check := func(t *testing.T, what string, err, match error, retryable bool) {
		t.Helper()
		for _, s := range sentinels {
			if errors.Is(err, s) != (s == match) {
				t.Errorf("%s: errors.Is(%v, %v) = %v", what, err, s, !(s == match))
			}
		}
		if client.IsRetryable(err) != retryable {
			t.Errorf("%s: IsRetryable(%v) = %v", what, err, !retryable)
		}
	}
	for _, k := range api.ProblemKinds() {
		t.Run(k.Title, func(t *testing.T) {
			body, _ := json.Marshal(api.Problem{Type: k.Type, Title: k.Title, Status: k.Status, Detail: "d"})
			_, err := answer(t, k.Status, api.ProblemContentType, "", string(body)).Get(t.Context(), uuid.New())
			check(t, k.Type, err, want[k.Class], k.Retryable())
			if errors.Is(err, client.ErrLeaseLost) != (k.Type == api.ProblemLeaseLost) {
				t.Errorf("ErrLeaseLost matched %v", err)
			}
			if errors.Is(err, client.ErrIdempotencyMismatch) != (k.Type == api.ProblemIdempotencyMismatch) {
				t.Errorf("ErrIdempotencyMismatch matched %v", err)
			}
		})
	}

	// A proxy's pages, and a type this client does not know.
	for _, c := range []struct {
		status    int
		ct, body  string
		match     error
		retryable bool
	}{
		{502, "text/html", "<h1>Bad Gateway</h1>", client.ErrUnavailable, true},
		{503, "text/plain", "down for maintenance", client.ErrUnavailable, true},
		{504, "text/html", "<h1>Gateway Timeout</h1>", client.ErrUnavailable, true},
		{400, "text/plain", "bad", client.ErrInvalid, false},
		{404, "text/plain", "404 page not found", client.ErrNotFound, false},
		{409, api.ProblemContentType, `{"type":"https://example.com/new-kind","title":"New","status":409}`, client.ErrConflict, false},
		{500, "text/plain", "oops", nil, false},
		{418, "text/plain", "teapot", nil, false},
	} {
		_, err := answer(t, c.status, c.ct, "", c.body).Get(t.Context(), uuid.New())
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != c.status {
			t.Fatalf("%d %s: %v", c.status, c.body, err)
		}
		check(t, c.body, err, c.match, c.retryable)
	}
}

func TestRetryAfterAndTransport(t *testing.T) {
	body, _ := json.Marshal(api.Problem{Type: api.ProblemBusy, Title: "Busy", Status: 503})
	_, err := answer(t, 503, api.ProblemContentType, "7", string(body)).Get(t.Context(), uuid.New())
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.RetryAfter != 7*time.Second || !client.IsRetryable(err) {
		t.Errorf("busy: %+v", err)
	}

	// No answer at all: retryable, unless the caller gave up.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, _ := client.New(url, "")
	if _, err := c.Get(t.Context(), uuid.New()); err == nil || !client.IsRetryable(err) {
		t.Errorf("connection refused: %v (retryable %v)", err, client.IsRetryable(err))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Get(ctx, uuid.New()); err == nil || client.IsRetryable(err) {
		t.Errorf("canceled: %v (retryable %v)", err, client.IsRetryable(err))
	}
	if client.IsRetryable(nil) {
		t.Error("nil is retryable")
	}
}

// TestRetriesUnavailable: a request answered 503 (the database does not
// answer) is sent again after the answer's Retry-After until another
// answer comes, or until its context ends, when the 503 is returned.
func TestRetriesUnavailable(t *testing.T) {
	body, _ := json.Marshal(api.Problem{Type: api.ProblemUnavailable, Title: "Service unavailable", Status: 503})
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Content-Type", api.ProblemContentType)
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(503)
			_, _ = w.Write(body)
			return
		}
		_ = json.NewEncoder(w).Encode(api.Job{ID: uuid.Nil, State: api.StateQueued})
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(t.Context(), uuid.New()); err != nil || calls.Load() != 3 {
		t.Fatalf("Get after two 503s: %v after %d calls, want success at the third", err, calls.Load())
	}

	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	calls.Store(-100) // 503 from now on
	_, err = c.Get(ctx, uuid.New())
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || !errors.Is(err, client.ErrUnavailable) || calls.Load() < -98 {
		t.Fatalf("Get while the server answers 503 until the context ends: %v after %d calls, want the 503 after a retry", err, calls.Load()+100)
	}
}
