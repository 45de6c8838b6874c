package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/job"
)

// arrivals is an upstream that records when each request arrives, and
// answers the first with first (nil: like the others) and every other
// one 200 "ok".
type arrivals struct {
	*httptest.Server
	mu    sync.Mutex
	at    []time.Time
	sent  time.Time // when the first answer was written, before it was sent
	first func(w http.ResponseWriter)
}

func newArrivals(t *testing.T, first func(w http.ResponseWriter)) *arrivals {
	t.Helper()
	a := &arrivals{first: first}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.at = append(a.at, time.Now())
		n := len(a.at)
		a.mu.Unlock()
		if n == 1 && a.first != nil {
			a.first(w)
			// The answer leaves when the handler returns: the gateway,
			// and the throttle it reports, see it after this.
			a.mu.Lock()
			a.sent = time.Now()
			a.mu.Unlock()
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(a.Close)
	return a
}

// times returns the arrivals so far and the first answer's time.
func (a *arrivals) times() ([]time.Time, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.at), a.sent
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestUpstreamThrottle (issue 15): an upstream that answers 429 with
// Retry-After: 2 while ten requests to it and ten to another upstream
// are queued receives no request for the 2 s after that answer, not
// even the request it refused, whose attempt is given back; then its
// queued requests drain, every one to 200, each at its first counted
// attempt (max_attempts is 1). The other upstream's requests, queued
// behind the refused upstream's, are served meanwhile: the throttle
// holds back the refusing upstream's requests only. The gateway's pool
// has one worker, so that every request but the first is queued when the
// 429 comes.
func TestUpstreamThrottle(t *testing.T) {
	const retryAfter = 2 * time.Second
	eachStore(t, func(t *testing.T, db database) {
		arrived, answer := make(chan struct{}, 1), make(chan struct{})
		busy := newArrivals(t, func(w http.ResponseWriter) {
			arrived <- struct{}{}
			<-answer
			w.Header().Set("Retry-After", "2")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		})
		var once sync.Once
		release := func() { once.Do(func() { close(answer) }) }
		t.Cleanup(release) // before the upstream closes, which waits for its handlers
		calm := newArrivals(t, nil)
		n := start(t, db, nil, options{
			upstreamURL: busy.URL, maxAttempts: 1, concurrency: 1,
			more: []gateway.Upstream{{Name: "calm", URL: mustURL(t, calm.URL)}},
		})

		first := n.submit("GET", "/gw/up/0", "", "store")
		recv(t, arrived, "the first request to reach the upstream")
		ids := []uuid.UUID{first}
		for i := 1; i < 10; i++ {
			ids = append(ids, n.submit("GET", fmt.Sprintf("/gw/up/%d", i), "", "store"))
		}
		var others []uuid.UUID
		for i := range 10 {
			others = append(others, n.submit("GET", fmt.Sprintf("/gw/calm/%d", i), "", "store"))
		}
		release()
		for _, id := range append(slices.Clone(ids), others...) {
			if j := n.waitState(id, job.StateSucceeded); j.Attempt != 1 {
				t.Errorf("job %s succeeded at attempt %d, want 1", id, j.Attempt)
			}
		}

		at, sent := busy.times()
		if len(at) != 11 {
			t.Fatalf("the throttled upstream got %d requests, want 11 (the refused one twice)", len(at))
		}
		for i, a := range at[1:] {
			if a.Before(sent.Add(retryAfter)) {
				t.Errorf("request %d reached the throttled upstream %s after its 429, within its Retry-After of %s",
					i+2, a.Sub(sent), retryAfter)
			}
		}
		t.Logf("the throttled upstream's next request came %s after its 429, the last %s after it", at[1].Sub(sent), at[len(at)-1].Sub(sent))
		calmAt, _ := calm.times()
		during := 0
		for _, a := range calmAt {
			if a.Before(sent.Add(retryAfter)) {
				during++
			}
		}
		if len(calmAt) != 10 || during == 0 {
			t.Errorf("the other upstream got %d requests, %d of them during the throttle; want 10, some during it", len(calmAt), during)
		}
		t.Logf("the other upstream was served %d of its 10 requests during the throttle", during)

		j, err := n.st.JobGet(context.Background(), first)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := n.st.JobEvents(context.Background(), first)
		if err != nil {
			t.Fatal(err)
		}
		kinds, detail := make([]job.EventKind, len(evs)), ""
		for i, ev := range evs {
			kinds[i] = ev.Kind
			if ev.Kind == job.EventThrottled {
				detail = ev.Detail
			}
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventThrottled, job.EventClaimed, job.EventSucceeded}
		if j.PartitionKey != "up" || !slices.Equal(kinds, want) || !strings.Contains(detail, "429") {
			t.Errorf("refused job: partition %q, journal %v (%q); want partition \"up\", journal %v with the 429",
				j.PartitionKey, kinds, detail, want)
		}
		// A fetch removes the result, and its job.
		for _, id := range ids {
			r := n.do("PUT", "/api/v1/async/"+id.String(), "")
			if r.status != http.StatusOK || string(r.body) != "ok" {
				t.Errorf("result of %s: %s, want 200 ok", id, r)
			}
		}
	})
}

// TestOverloadWithoutRetryAfter: without a Retry-After of a delay to
// come (none, a date past, text that is neither), a 429 is the
// upstream's final answer, stored, and a 503 an ordinary failure whose
// attempt counts, as before throttles.
func TestOverloadWithoutRetryAfter(t *testing.T) {
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		name, retryAfter string
		status           int
	}{
		{"429 alone", "", http.StatusTooManyRequests},
		{"429 past date", past, http.StatusTooManyRequests},
		{"429 garbage", "soon", http.StatusTooManyRequests},
		{"503 alone", "", http.StatusServiceUnavailable},
		{"503 garbage", "1.5", http.StatusServiceUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			eachStore(t, func(t *testing.T, db database) {
				up := newArrivals(t, func(w http.ResponseWriter) {
					if c.retryAfter != "" {
						w.Header().Set("Retry-After", c.retryAfter)
					}
					http.Error(w, "busy", c.status)
				})
				n := start(t, db, nil, options{upstreamURL: up.URL, maxAttempts: 2})
				id := n.submit("GET", "/gw/up/x", "", "store")
				j := n.waitState(id, job.StateSucceeded)
				r := n.do("PUT", "/api/v1/async/"+id.String(), "")
				switch c.status {
				case http.StatusTooManyRequests:
					if j.Attempt != 1 || r.status != http.StatusTooManyRequests {
						t.Fatalf("attempt %d, fetched %s; want the 429 stored at attempt 1", j.Attempt, r)
					}
				default:
					if j.Attempt != 2 || r.status != http.StatusOK {
						t.Fatalf("attempt %d, fetched %s; want a retry whose attempt counts, then 200", j.Attempt, r)
					}
				}
			})
		})
	}
}

// TestThrottleByUpstreamKeepsOperatorLimits: at start the gateway queue
// is made to throttle by partition (the upstream), keeping the limits an
// operator set on it; a second start changes nothing.
func TestThrottleByUpstreamKeepsOperatorLimits(t *testing.T) {
	eachStore(t, func(t *testing.T, db database) {
		st := db.open(t)
		if err := st.QueueSetLimits(context.Background(), gateway.Queue, flow.Limits{GlobalLimit: 7}); err != nil {
			t.Fatal(err)
		}
		st.Close()
		up := newUpstream(t)
		want := flow.Limits{GlobalLimit: 7, ThrottleBy: flow.ByPartitionKey}
		for range 2 {
			n := start(t, db, up, options{})
			all, err := n.st.QueueSettings(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got *flow.Limits
			for _, q := range all {
				if q.Name == gateway.Queue {
					got = &q.Limits
				}
			}
			if got == nil || got.String() != want.String() {
				t.Fatalf("gateway queue limits %v, want %v", got, want)
			}
			n.stop()
		}
	})
}
