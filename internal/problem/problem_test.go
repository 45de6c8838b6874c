package problem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// TestFromError maps each kind of error, wrapped as the layers below
// wrap them, to its problem; together the cases cover every kind of the
// table.
func TestFromError(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("store: doing something: %w", err) }
	cases := []struct {
		err   error
		typ   string
		field string
	}{
		{problem.Errorf(api.ProblemBadRequest, "limit", "limit must be a number"), api.ProblemBadRequest, "limit"},
		{wrap(job.Invalid("kind", "is required")), api.ProblemValidation, "kind"},
		{problem.Errorf(api.ProblemTooLarge, "", "too large"), api.ProblemTooLarge, ""},
		{&api.Problem{Type: api.ProblemUnauthorized, Title: "Unauthorized", Status: 401, Detail: "no key"}, api.ProblemUnauthorized, ""},
		{problem.Errorf(api.ProblemForbidden, "", "no scope"), api.ProblemForbidden, ""},
		{wrap(job.ErrNotFound), api.ProblemNotFound, ""},
		{wrap(process.ErrNoProc), api.ProblemNotFound, ""},
		{wrap(process.ErrNoSpace), api.ProblemNotFound, ""},
		{problem.Errorf(api.ProblemMethodNotAllowed, "", "no"), api.ProblemMethodNotAllowed, ""},
		{wrap(job.ErrWrongState), api.ProblemWrongState, ""},
		{wrap(process.ErrExists), api.ProblemWrongState, ""},
		{wrap(process.ErrInError), api.ProblemWrongState, ""},
		{wrap(process.ErrNotError), api.ProblemWrongState, ""},
		{wrap(process.ErrZombie), api.ProblemWrongState, ""},
		{wrap(job.ErrDuplicate), api.ProblemDuplicate, ""},
		{wrap(job.ErrIdempotencyMismatch), api.ProblemIdempotencyMismatch, "idempotency_key"},
		{wrap(job.ErrLeaseLost), api.ProblemLeaseLost, "lease_token"},
		{problem.Errorf(api.ProblemCanceled, "", "canceled"), api.ProblemCanceled, ""},
		{errors.New("disk on fire"), api.ProblemInternal, ""},
		{problem.Errorf(api.ProblemUpstreamFailed, "", "upstream failed"), api.ProblemUpstreamFailed, ""},
		{fmt.Errorf("%w: HTTP 500", process.ErrProcessor), api.ProblemProcessorFailed, ""},
		{wrap(problem.ErrUnavailable), api.ProblemUnavailable, ""},
		{problem.Errorf(api.ProblemBusy, "", "busy"), api.ProblemBusy, ""},
		{wrap(store.Mark(errors.New("deadlock detected"), store.ErrContended)), api.ProblemBusy, ""},
		{problem.Errorf(api.ProblemUpstreamTimeout, "", "slow"), api.ProblemUpstreamTimeout, ""},
		{problem.Errorf(api.ProblemTaskTimeout, "", "pending"), api.ProblemTaskTimeout, ""},
		{problem.Errorf(api.ProblemTooManyRequests, "", "too many streams"), api.ProblemTooManyRequests, ""},
		{problem.Errorf(api.ProblemUnsupportedMediaType, "Content-Type", "not JSON"), api.ProblemUnsupportedMediaType, "Content-Type"},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		p := problem.FromError(c.err)
		k, ok := api.LookupProblem(c.typ)
		if !ok || p.Type != c.typ || p.Status != k.Status || p.Title != k.Title || p.Field != c.field || p.Detail == "" {
			t.Errorf("FromError(%v) = %+v, want type %s, status %d, field %q", c.err, p, c.typ, k.Status, c.field)
		}
		covered[p.Type] = true
	}
	for _, k := range api.ProblemKinds() {
		if !covered[k.Type] {
			t.Errorf("no case maps to %s", k.Type)
		}
	}
	if p := problem.FromError(errors.New("secret=hunter2")); strings.Contains(p.Detail, "hunter2") {
		t.Errorf("an internal error shows its cause: %+v", p)
	}
	if p := problem.New("https://example.com/not-ours", "", "d"); p.Type != api.ProblemInternal || p.Status != 500 {
		t.Errorf("an unknown type: %+v", p)
	}
}

// TestWrite: every problem answer has the same headers and encoding.
func TestWrite(t *testing.T) {
	for _, k := range api.ProblemKinds() {
		rec := httptest.NewRecorder()
		problem.Write(rec, problem.New(k.Type, "f", "a <b> & c"))
		h := rec.Header()
		if rec.Code != k.Status || h.Get("Content-Type") != api.ProblemContentType || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v", k.Type, rec.Code, h)
		}
		if (h.Get("WWW-Authenticate") != "") != (k.Status == 401) {
			t.Errorf("%s: WWW-Authenticate %q", k.Type, h.Get("WWW-Authenticate"))
		}
		if (h.Get("Retry-After") == "5") != k.Retryable() {
			t.Errorf("%s: Retry-After %q", k.Type, h.Get("Retry-After"))
		}
		if !strings.Contains(rec.Body.String(), `"detail":"a <b> & c"`) || !strings.HasSuffix(rec.Body.String(), "}\n") {
			t.Errorf("%s: body %s", k.Type, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	rec.Header().Set("Retry-After", "30")
	problem.Write(rec, problem.New(api.ProblemBusy, "", "busy"))
	if rec.Header().Get("Retry-After") != "30" {
		t.Errorf("a writer's own Retry-After was replaced: %v", rec.Header())
	}
}

// TestWriteError: an internal error is logged with its cause and
// answered without it; nothing is answered to a caller that went away.
func TestWriteError(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	rec := httptest.NewRecorder()
	problem.WriteError(rec, httptest.NewRequest("GET", "/x", nil), log, "request failed", errors.New("disk on fire"))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "disk") || !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("internal: %d %s; log %s", rec.Code, rec.Body, logs.String())
	}

	logs.Reset()
	req := httptest.NewRequest("GET", "/x", nil)
	ctx, cancel := context.WithCancel(req.Context())
	cancel()
	rec = httptest.NewRecorder()
	problem.WriteError(rec, req.WithContext(ctx), log, "request failed", errors.New("read: canceled"))
	if rec.Body.Len() != 0 || logs.Len() != 0 {
		t.Errorf("a gone caller got %d %s; log %s", rec.Code, rec.Body, logs.String())
	}
	rec = httptest.NewRecorder()
	problem.WriteError(rec, req.WithContext(ctx), log, "request failed", job.ErrNotFound)
	if rec.Code != http.StatusNotFound {
		t.Errorf("a known kind is answered even to a gone caller: %d", rec.Code)
	}
}
