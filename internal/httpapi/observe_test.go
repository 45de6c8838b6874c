package httpapi

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

type requestRecord struct {
	route, method string
	status        int
}

type recordingHTTP struct {
	mu   sync.Mutex
	reqs []requestRecord
}

func (r *recordingHTTP) Request(route, method string, status int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, requestRecord{route, method, status})
}

func (r *recordingHTTP) Subscribers(int) {}

// TestInstrument: each request gets an id (the caller's when sane, else a
// new one), echoed and logged once with its route pattern and status, and
// is recorded under that pattern ("" when no route served it).
func TestInstrument(t *testing.T) {
	var logs bytes.Buffer
	obs := &recordingHTTP{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) {
		if RequestID(r.Context()) == "" {
			t.Errorf("no request id in the handler's context")
		}
		w.WriteHeader(http.StatusTeapot)
	})
	h := Instrument(mux, InstrumentConfig{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Observer: obs})

	cases := []struct {
		path, sentID string
		wantID       bool // the sent id is echoed
		route        string
		status       int
	}{
		{"/things/42?secret=x", "req-1", true, "GET /things/{id}", http.StatusTeapot},
		{"/things/43", "bad id with spaces", false, "GET /things/{id}", http.StatusTeapot},
		{"/nothing", strings.Repeat("x", 200), false, "", http.StatusNotFound},
	}
	for _, c := range cases {
		req := httptest.NewRequest("GET", c.path, nil)
		req.Header.Set(RequestIDHeader, c.sentID)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		id := rec.Header().Get(RequestIDHeader)
		if (id == c.sentID) != c.wantID || id == "" {
			t.Errorf("%s: id %q echoed for %q", c.path, id, c.sentID)
		}
		if !strings.Contains(logs.String(), "request_id="+id) {
			t.Errorf("%s: no log line names request %s:\n%s", c.path, id, logs.String())
		}
	}
	if n := strings.Count(logs.String(), `msg="http request"`); n != len(cases) {
		t.Errorf("%d request lines for %d requests:\n%s", n, len(cases), logs.String())
	}
	if strings.Contains(logs.String(), "secret=x") {
		t.Errorf("the query string was logged:\n%s", logs.String())
	}
	for i, c := range cases {
		if got := obs.reqs[i]; got != (requestRecord{c.route, "GET", c.status}) {
			t.Errorf("%s recorded as %+v", c.path, got)
		}
	}
}
