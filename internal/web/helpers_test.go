package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/builtin"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/internal/web"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/schedule"
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
	// Engine runs an engine with the built-in kinds on queue "default"
	// (2 workers), its progress written every 10ms.
	Engine bool
	// TLS serves HTTPS.
	TLS bool
	// ScanLimit is the jobs list's (default web's).
	ScanLimit int
	// Processor serves the durable processes of namespace "orders".
	Processor process.Processor
	// Upstream is the async gateway's upstream "reports".
	Upstream *url.URL
	// Clock is the dashboard's (default the real one).
	Clock clock.Clock
	// Health is the node's queue health snapshot (web.Config.Health);
	// nil reads the store.
	Health func() (*store.Health, time.Time)
	// Streams bounds the API's and the dashboard's event streams
	// (default httpapi's).
	Streams *httpapi.Streams
}

// dash is jobd's API and dashboard over a real store behind a real HTTP
// server, wired as jobd serve wires them (web.Mount beside the API).
type dash struct {
	t     testing.TB
	URL   string
	store store.Store
	srv   *httptest.Server
	// api is a client of the API with the admin secret.
	api *client.Client
}

func newDash(t testing.TB, st store.Store, o dashOptions) *dash {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	apiCfg := httpapi.Config{Store: st, AdminSecret: o.Secret, Logger: logger, PollInterval: 10 * time.Millisecond, Streams: o.Streams}
	cfg := web.Config{Store: st, AdminSecret: o.Secret, Logger: logger, ScanLimit: o.ScanLimit, Clock: o.Clock, Health: o.Health}
	// The one scheduler the API and the dashboard share, as in jobd serve
	// (its ticker does not run here).
	scheduler, err := schedule.New(schedule.Config{Store: st, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	apiCfg.Schedules, cfg.Schedules = scheduler, scheduler
	var gw *gateway.Gateway
	if o.Engine || o.Processor != nil || o.Upstream != nil {
		queues := []engine.QueueConfig{{Queue: "default", Concurrency: 2}}
		if o.Processor != nil {
			queues = append(queues, engine.QueueConfig{Queue: process.DefaultQueue, Concurrency: 2})
		}
		if o.Upstream != nil {
			queues = append(queues, engine.QueueConfig{Queue: gateway.Queue, Concurrency: 2})
		}
		eng, err := engine.New(engine.Config{
			Store: st, Logger: logger, Queues: queues,
			ProgressInterval: 10 * time.Millisecond, PollInterval: 50 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		builtin.Register(eng)
		if o.Processor != nil {
			r, err := process.New(st, eng, "", []process.Namespace{{Name: "orders", Processor: o.Processor}})
			if err != nil {
				t.Fatal(err)
			}
			apiCfg.Processes, cfg.Processes = r, r
		}
		if o.Upstream != nil {
			gcfg := gateway.Config{Store: st, Engine: eng, Logger: logger,
				Upstreams: []gateway.Upstream{{Name: "reports", URL: o.Upstream}}}
			if o.Secret != "" {
				gcfg.Authorizer = httpapi.NewAuthorizer(st, o.Secret)
			}
			if gw, err = gateway.New(gcfg); err != nil {
				t.Fatal(err)
			}
			apiCfg.Async, cfg.Async = gw.Results(), gw
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- eng.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("engine: %v", err)
			}
		})
		cfg.Leading = eng.Leading
	}
	apiHandler, err := httpapi.New(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := httpapi.NewJobStream(apiCfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.JobStream = stream
	ui, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	web.Mount(mux, ui)
	if gw != nil {
		gwHandler := gw.Handler()
		for _, p := range []string{"/gw/", "/_api/job", "/_api/job/"} {
			mux.Handle(p, gwHandler)
		}
	}
	mux.Handle("/", apiHandler)
	var srv *httptest.Server
	if o.TLS {
		srv = httptest.NewTLSServer(mux)
	} else {
		srv = httptest.NewServer(mux)
	}
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, o.Secret, client.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return &dash{t: t, URL: srv.URL, store: st, srv: srv, api: c}
}

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
