package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// rawStream is an open event stream read line by line.
type rawStream struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
}

// streamRequest opens GET /api/v1/jobs/{id}/stream with credential auth
// ("" for none) through client (nil for the default one) and returns the
// answer, its body open.
func streamRequest(t *testing.T, s *testServer, c *http.Client, id, auth string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", s.URL+"/api/v1/jobs/"+id+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func openRawStream(t *testing.T, s *testServer, c *http.Client, id, auth string, hdr ...string) *rawStream {
	t.Helper()
	resp := streamRequest(t, s, c, id, auth, hdr...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	return &rawStream{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
}

// event is one block of a stream: its fields, "" for a comment.
type event struct{ name, id, data, retry string }

// next returns the next event (comments skipped); ok is false at the
// stream's end.
func (r *rawStream) next() (ev event, ok bool) {
	r.t.Helper()
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			return ev, false
		}
		line = strings.TrimRight(line, "\n")
		name, value, _ := strings.Cut(line, ": ")
		switch name {
		case "":
			if ev != (event{}) {
				return ev, true
			}
		case "event":
			ev.name = value
		case "id":
			ev.id = value
		case "data":
			ev.data = value
		case "retry":
			ev.retry = value
		}
	}
}

// end reads the stream to its end and returns its last event.
func (r *rawStream) end() event {
	r.t.Helper()
	var last event
	for {
		ev, ok := r.next()
		if !ok {
			return last
		}
		last = ev
	}
}

func (r *rawStream) close() { r.resp.Body.Close() }

// wantTooMany checks that resp is 429 too-many-requests with Retry-After.
func wantTooMany(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	var p api.Problem
	_ = json.NewDecoder(resp.Body).Decode(&p)
	if resp.StatusCode != http.StatusTooManyRequests || p.Type != api.ProblemTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: %d %+v (Retry-After %q), want 429 too-many-requests", what, resp.StatusCode, p, resp.Header.Get("Retry-After"))
	}
}

// newKey creates an API key of scopes and returns it.
func (s *testServer) newKey(t *testing.T, name string, scopes ...string) api.Key {
	t.Helper()
	b, _ := json.Marshal(api.KeyRequest{Name: name, Scopes: scopes})
	var k api.Key
	s.do("POST", "/api/v1/keys", string(b)).must(t, 201, &k)
	return k
}

// TestStreamCaps: a key holds at most MaxPerCaller streams, the node
// MaxOpen; past either, 429 too-many-requests with Retry-After; a stream
// that ends gives its place back.
func TestStreamCaps(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		streams, err := httpapi.NewStreams(httpapi.StreamLimits{MaxOpen: 3, MaxPerCaller: 2})
		if err != nil {
			t.Fatal(err)
		}
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret, Streams: streams})
		id := s.submit(t, `{"kind":"k"}`, 201).ID.String()
		a, b := s.newKey(t, "a", api.ScopeRead), s.newKey(t, "b", api.ScopeRead)

		a1 := openRawStream(t, s, nil, id, a.Key)
		openRawStream(t, s, nil, id, a.Key)
		wantTooMany(t, "a key's third stream", streamRequest(t, s, nil, id, a.Key))
		openRawStream(t, s, nil, id, b.Key)
		wantTooMany(t, "the node's fourth stream", streamRequest(t, s, nil, id, b.Key))
		wantTooMany(t, "the admin secret's first stream, past the node's cap", streamRequest(t, s, nil, id, adminSecret))
		if got := streams.Open(); got != 3 {
			t.Fatalf("%d streams open, want 3", got)
		}

		a1.close()
		waitOpen(t, streams, 2)
		openRawStream(t, s, nil, id, b.Key) // the place a1 gave back
		wantTooMany(t, "b's third stream", streamRequest(t, s, nil, id, b.Key))
	})
}

// waitOpen waits until the node holds n streams (a stream whose client
// left ends at its next read of the connection).
func waitOpen(t *testing.T, streams *httpapi.Streams, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for streams.Open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d streams open, want %d", streams.Open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStreamCapsByAddress: on a server without credentials, a caller is
// a client address.
func TestStreamCapsByAddress(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		streams, err := httpapi.NewStreams(httpapi.StreamLimits{MaxPerCaller: 1})
		if err != nil {
			t.Fatal(err)
		}
		s := newServer(t, st, httpapi.Config{Streams: streams})
		id := s.submit(t, `{"kind":"k"}`, 201).ID.String()
		from := func(ip string) *http.Client {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
			return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
		}
		openRawStream(t, s, from("127.0.0.1"), id, "")
		wantTooMany(t, "127.0.0.1's second stream", streamRequest(t, s, from("127.0.0.1"), id, ""))
		openRawStream(t, s, from("127.0.0.2"), id, "")
	})
}

// TestStreamMaxAge: a stream ends at its maximum age with "retry:", and
// the client's reconnection with Last-Event-ID misses nothing and
// repeats nothing.
func TestStreamMaxAge(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		streams, err := httpapi.NewStreams(httpapi.StreamLimits{MaxAge: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s := newServer(t, st, httpapi.Config{Streams: streams})
		id := s.submit(t, `{"kind":"k"}`, 201).ID.String()
		sse := openRawStream(t, s, nil, id, "")
		first, _ := sse.next()
		if first.name != "job" || first.id == "" {
			t.Fatalf("first event %+v", first)
		}
		if last := sse.end(); last.retry != "1000" {
			t.Fatalf("the stream ended with %+v, want retry: 1000", last)
		}

		// Reconnected with the id it has: nothing again until a change,
		// which comes with its new id.
		streams2, _ := httpapi.NewStreams(httpapi.StreamLimits{MaxAge: time.Hour})
		s = newServer(t, st, httpapi.Config{Streams: streams2})
		sse = openRawStream(t, s, nil, id, "", "Last-Event-ID: "+first.id)
		run := claim(t, st, "default")
		ev, _ := sse.next()
		var j api.Job
		if err := json.Unmarshal([]byte(ev.data), &j); err != nil || j.State != api.StateRunning || ev.id == first.id {
			t.Fatalf("the first event after a reconnect: %+v, want the running job under a new id", ev)
		}
		sse.close()

		// Another id: the job as it is, first.
		sse = openRawStream(t, s, nil, id, "", "Last-Event-ID: "+first.id)
		if ev2, _ := sse.next(); ev2.id != ev.id {
			t.Fatalf("reconnected with an older id: %+v, want the current version %s", ev2, ev.id)
		}
		sse.close()

		// The final version, had: 204, nothing to send.
		finish(t, st, run, store.OutcomeSucceeded, "", "")
		final := openRawStream(t, s, nil, id, "")
		last, _ := final.next()
		if resp := streamRequest(t, s, nil, id, "", "Last-Event-ID: "+last.id); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("reconnected with the final version's id: %d, want 204", resp.StatusCode)
		}
	})
}

// TestStreamRevoked: a stream ends once its key is revoked, with an
// error event of type unauthorized; the admin secret's is not rechecked.
func TestStreamRevoked(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		streams, err := httpapi.NewStreams(httpapi.StreamLimits{Recheck: 10 * time.Millisecond, MaxAge: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret, Streams: streams})
		id := s.submit(t, `{"kind":"k"}`, 201).ID.String()
		k := s.newKey(t, "reader", api.ScopeRead)
		sse := openRawStream(t, s, nil, id, k.Key)
		if ev, _ := sse.next(); ev.name != "job" {
			t.Fatalf("first event %+v", ev)
		}
		s.do("DELETE", "/api/v1/keys/"+k.ID, "").must(t, 204, nil)
		last := sse.end()
		var p api.Problem
		if err := json.Unmarshal([]byte(last.data), &p); err != nil || last.name != "error" || p.Type != api.ProblemUnauthorized {
			t.Fatalf("the revoked key's stream ended with %+v, want an unauthorized error event", last)
		}
		if resp := streamRequest(t, s, nil, id, k.Key); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the revoked key opens a stream: %d", resp.StatusCode)
		}
	})
}

// TestStreamsShared: the dashboard's streams (NewJobStream, caller named
// by WithStreamCaller) and the API's count against one Streams, and a
// caller's check ends its stream when it says no.
func TestStreamsShared(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		streams, err := httpapi.NewStreams(httpapi.StreamLimits{MaxOpen: 1, Recheck: 10 * time.Millisecond, MaxAge: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		s := newServer(t, st, httpapi.Config{Streams: streams})
		id := s.submit(t, `{"kind":"k"}`, 201).ID.String()
		stream, err := httpapi.NewJobStream(httpapi.Config{Store: st, Streams: streams, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var allowed atomic.Bool
		allowed.Store(true)
		mux := http.NewServeMux()
		mux.HandleFunc("GET /ui/jobs/{id}/stream", func(w http.ResponseWriter, r *http.Request) {
			check := func(context.Context) (bool, error) { return allowed.Load(), nil }
			stream.ServeHTTP(w, httpapi.WithStreamCaller(r, "session", check))
		})
		ui := newHTTPServer(t, mux, 0, 0)
		resp, err := http.Get(ui + "/ui/jobs/" + id + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the dashboard's stream: %d", resp.StatusCode)
		}
		wantTooMany(t, "the API's stream beside the dashboard's, past the node's cap", streamRequest(t, s, nil, id, ""))

		allowed.Store(false) // the session ends
		ui2 := &rawStream{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
		if last := ui2.end(); last.name != "error" || !strings.Contains(last.data, api.ProblemUnauthorized) {
			t.Fatalf("the ended session's stream ended with %+v", last)
		}
		waitOpen(t, streams, 0)
	})
}

func TestStreamLimitsInvalid(t *testing.T) {
	for _, l := range []httpapi.StreamLimits{{MaxOpen: -1}, {MaxPerCaller: -1}, {MaxAge: -1}, {Recheck: -1}} {
		if _, err := httpapi.NewStreams(l); err == nil {
			t.Errorf("NewStreams(%+v) accepted", l)
		}
	}
	s, err := httpapi.NewStreams(httpapi.StreamLimits{})
	if err != nil {
		t.Fatal(err)
	}
	want := httpapi.StreamLimits{MaxOpen: httpapi.DefaultMaxStreams, MaxPerCaller: httpapi.DefaultMaxStreamsPerCaller,
		MaxAge: httpapi.DefaultStreamMaxAge, Recheck: httpapi.DefaultStreamRecheck}
	if got := s.Limits(); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
}
