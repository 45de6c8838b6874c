package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd"
	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// drivers are the stores every test runs against.
var drivers = teststore.Drivers

// openStore opens a migrated store of driver on a fresh database.
func openStore(t testing.TB, driver string) store.Store { return teststore.Open(t, driver) }

// eachStore runs fn as a parallel subtest per driver.
func eachStore(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Helper()
	teststore.Each(t, fn)
}

// dashOptions shape a test server.
type dashOptions struct {
	// Secret turns authentication on.
	Secret string
	// Engine gives the node a pool of 2 workers on queue "default", which
	// runs the built-in kinds, its progress written every 10ms.
	Engine bool
	// TLS serves HTTPS.
	TLS bool
	// ScanLimit is the jobs list's (default web's).
	ScanLimit int
	// Processor serves the durable processes of namespace "orders".
	Processor process.Processor
	// Upstream is the async gateway's upstream "reports".
	Upstream *url.URL
	// Clock is the node's (default the real one).
	Clock clock.Clock
	// HealthInterval is the refresh period of the node's queue health
	// snapshot (default jobd's).
	HealthInterval time.Duration
	// MaxStreamsPerCaller, StreamRecheck and StreamMaxAge bound the API's
	// and the dashboard's event streams (default jobd's).
	MaxStreamsPerCaller int
	StreamRecheck       time.Duration
	StreamMaxAge        time.Duration
}

// dash is jobd's API and dashboard over a real store behind a real HTTP
// server, the whole node as jobd serve composes it (jobd.NewServer).
type dash struct {
	t     testing.TB
	URL   string
	store store.Store
	srv   *httptest.Server
	// secret is the admin secret, "" when authentication is off.
	secret string
	// api is a client of the API with the admin secret.
	api *client.Client
}

func newDash(t testing.TB, st store.Store, o dashOptions) *dash {
	t.Helper()
	var queues []engine.QueueConfig
	if o.Engine || o.Processor != nil || o.Upstream != nil {
		queues = []engine.QueueConfig{{Queue: "default", Concurrency: 2}}
	}
	cfg := jobd.Config{
		Store: st, Logger: slog.New(slog.DiscardHandler), AdminSecret: o.Secret,
		Engine: engine.Config{
			Queues: queues, Clock: o.Clock,
			ProgressInterval: 10 * time.Millisecond, PollInterval: 50 * time.Millisecond,
		},
		HTTP: jobd.HTTPConfig{
			PollInterval:        10 * time.Millisecond,
			MaxStreamsPerCaller: o.MaxStreamsPerCaller, StreamRecheck: o.StreamRecheck, StreamMaxAge: o.StreamMaxAge,
		},
		Metrics:   jobd.MetricsConfig{HealthInterval: o.HealthInterval},
		Dashboard: jobd.DashboardConfig{ScanLimit: o.ScanLimit},
	}
	if o.Processor != nil {
		cfg.Processes = []process.Namespace{{Name: "orders", Processor: o.Processor}}
		cfg.Engine.Queues = append(cfg.Engine.Queues, engine.QueueConfig{Queue: process.DefaultQueue, Concurrency: 2})
	}
	if o.Upstream != nil {
		cfg.Gateway.Upstreams = []jobd.Upstream{{Name: "reports", URL: o.Upstream}}
		cfg.Engine.Queues = append(cfg.Engine.Queues, engine.QueueConfig{Queue: gateway.Queue, Concurrency: 2})
	}
	ctx, cancel := context.WithCancel(context.Background())
	node, err := jobd.NewServer(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		if err := node.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	var srv *httptest.Server
	if o.TLS {
		srv = httptest.NewTLSServer(node.Handler())
	} else {
		srv = httptest.NewServer(node.Handler())
	}
	t.Cleanup(srv.Close) // first: the requests end before the node stops
	c, err := client.New(srv.URL, o.Secret, client.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return &dash{t: t, URL: srv.URL, store: st, srv: srv, secret: o.Secret, api: c}
}

// metrics reads GET /metrics: its lines.
func (d *dash) metrics() []string {
	d.t.Helper()
	req, err := http.NewRequest("GET", d.URL+"/metrics", nil)
	if err != nil {
		d.t.Fatal(err)
	}
	if d.secret != "" {
		req.Header.Set("Authorization", "Bearer "+d.secret)
	}
	resp, err := d.srv.Client().Do(req)
	if err != nil {
		d.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		d.t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return strings.Split(string(body), "\n")
}

// waitMetrics polls GET /metrics, every 10 ms for at most 30 s, until
// ok holds of its lines; sent is when the request was sent.
func (d *dash) waitMetrics(what string, ok func(lines []string, sent time.Time) bool) {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sent := time.Now()
		if ok(d.metrics(), sent) {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("GET /metrics: no %s after 30s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitMetric waits until GET /metrics has line: the node's queue
// health gauges show a snapshot with it.
func (d *dash) waitMetric(line string) {
	d.t.Helper()
	d.waitMetrics(line, func(lines []string, _ time.Time) bool { return slices.Contains(lines, line) })
}

// waitSnapshot waits until the node's queue health snapshot, which the
// overview's counts come from, was begun after this call: it shows what
// the test wrote before. The node's HealthInterval must be short.
func (d *dash) waitSnapshot() {
	d.t.Helper()
	called := time.Now()
	d.waitMetrics("queue health snapshot begun after the test's writes", func(lines []string, sent time.Time) bool {
		// The gauges were collected after sent: the snapshot was begun
		// after sent, less its age and its refresh's duration.
		age, took := gauge(lines, "jobd_queue_health_age_seconds"), gauge(lines, "jobd_queue_health_refresh_duration_seconds")
		return age >= 0 && took >= 0 && !sent.Add(-seconds(age)-seconds(took)).Before(called)
	})
}

// gauge is the value of an unlabelled gauge in metrics lines, -1 when
// absent.
func gauge(lines []string, name string) float64 {
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// submit submits a job through the API.
func (d *dash) submit(req api.SubmitRequest) *api.Job {
	d.t.Helper()
	j, _, err := d.api.Submit(context.Background(), req)
	if err != nil {
		d.t.Fatalf("submit: %v", err)
	}
	return j
}

// key creates an API key of scopes and returns its secret.
func (d *dash) key(name string, scopes ...string) *api.Key {
	d.t.Helper()
	k, err := d.api.CreateKey(context.Background(), name, scopes)
	if err != nil {
		d.t.Fatalf("create key: %v", err)
	}
	return k
}

// browser is an HTTP client with cookies that follows no redirect, as a
// browser of the dashboard would be, minus the script.
type browser struct {
	t  testing.TB
	d  *dash
	hc *http.Client
}

func (d *dash) browser() *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		d.t.Fatal(err)
	}
	hc := *d.srv.Client() // a copy: its own cookies
	hc.Jar = jar
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{t: d.t, d: d, hc: &hc}
}

type page struct {
	status int
	header http.Header
	body   string
}

// location is where a redirect goes.
func (p *page) location() string { return p.header.Get("Location") }

func (b *browser) do(req *http.Request) *page {
	b.t.Helper()
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return &page{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// get reads a path of the server.
func (b *browser) get(path string) *page {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.d.URL+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

// post sends a form as a page of the dashboard does: same origin.
// hdr are "Name: value" pairs that replace the defaults.
func (b *browser) post(path string, form url.Values, hdr ...string) *page {
	b.t.Helper()
	req, err := http.NewRequest("POST", b.d.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.d.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return b.do(req)
}

var csrfField = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// token reads the CSRF token of a page's forms.
func (b *browser) token(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s (%d): no form token in\n%s", path, p.status, p.body)
	}
	return m[1]
}

// login logs in with key and checks that it worked.
func (b *browser) login(key string) {
	b.t.Helper()
	tok := b.token("/ui/login")
	p := b.post("/ui/login", url.Values{"csrf": {tok}, "key": {key}, "next": {"/ui/"}})
	if p.status != http.StatusSeeOther || p.location() != "/ui/" {
		b.t.Fatalf("login: %d to %q\n%s", p.status, p.location(), p.body)
	}
}

// act posts an action's form with the token of the page at from.
func (b *browser) act(from, action string, form url.Values) *page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.token(from))
	return b.post(action, form)
}

// job reads a job from the store.
func (d *dash) job(id string) *job.Job {
	d.t.Helper()
	j, err := d.store.JobGet(context.Background(), mustUUID(d.t, id))
	if err != nil {
		d.t.Fatalf("get job %s: %v", id, err)
	}
	return j
}

// summary reads the overview's summary endpoint.
func (b *browser) summary() map[string]any {
	b.t.Helper()
	p := b.get("/ui/summary")
	if p.status != http.StatusOK {
		b.t.Fatalf("summary: %d %s", p.status, p.body)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(p.body), &out); err != nil {
		b.t.Fatalf("summary: %v in %s", err, p.body)
	}
	return out
}
