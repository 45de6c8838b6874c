package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var discard = slog.New(slog.DiscardHandler)

func openStore(t *testing.T, driver string) store.Store {
	t.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		err error
	)
	switch driver {
	case "sqlite":
		st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "jobd.db"), sqlite.Options{})
	case "postgres":
		st, err = postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{Logger: discard})
	}
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return st
}

// finishSignal wraps the metrics' job recorder and signals each outcome
// recorded: the test waits on it, not on time.
type finishSignal struct {
	*telemetry.Metrics
	outcomes chan struct{}
}

func (f *finishSignal) Kind(queue, kind string) observe.KindRecorder {
	return signalRecorder{f.Metrics.Kind(queue, kind), f.outcomes}
}

type signalRecorder struct {
	observe.KindRecorder
	outcomes chan struct{}
}

func (r signalRecorder) Finished(o observe.Outcome, ran time.Duration) {
	r.KindRecorder.Finished(o, ran)
	r.outcomes <- struct{}{}
}

// TestScrapeAfterMixedWorkload: jobs submitted over HTTP and run by the
// engine (successes, permanent failures, a retry), jobs waiting in a
// queue no node works: a scrape of /metrics then reports each exactly,
// the oldest waiting job's age within a second of the truth, and passes
// promtool's check when promtool is installed. On both stores.
func TestScrapeAfterMixedWorkload(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			testScrape(t, openStore(t, driver))
		})
	}
}

func testScrape(t *testing.T, st store.Store) {
	ctx := t.Context()
	var eng *engine.Engine
	m := telemetry.NewMetrics(telemetry.Config{Version: "test", Pools: st.(store.PoolReporter),
		Leading: func() bool { return eng.Leading() }})
	sig := &finishSignal{Metrics: m, outcomes: make(chan struct{}, 100)}
	var err error
	eng, err = engine.New(engine.Config{Store: st, Logger: discard, Observer: sig,
		Queues: []engine.QueueConfig{{Queue: "work", Concurrency: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	var flakyRuns atomic.Int32
	engine.Register(eng, "ok", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) { return "done", nil })
	engine.Register(eng, "boom", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
		return "", engine.Permanent(errors.New("boom"))
	})
	engine.Register(eng, "flaky", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
		if flakyRuns.Add(1) == 1 {
			return "", engine.RetryAfter(errors.New("not yet"), 0)
		}
		return "done", nil
	})
	health := m.WatchHealth(telemetry.HealthConfig{Source: st, Logger: discard})
	api, err := httpapi.New(httpapi.Config{Store: st, Logger: discard, AdminSecret: "s3cret-admin", Metrics: m.Handler(),
		Observer: httpapi.Observer{Jobs: m, HTTP: m}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Instrument(api, httpapi.InstrumentConfig{Logger: discard, Observer: m}))
	defer srv.Close()

	// Jobs of a queue no node works: three due, the oldest due 30s ago,
	// and one scheduled.
	oldest := time.Now().Add(-30 * time.Second).UTC().Truncate(time.Millisecond)
	for _, at := range []time.Time{oldest, oldest.Add(10 * time.Second), oldest.Add(20 * time.Second), time.Now().Add(time.Hour)} {
		submit(t, srv.URL, fmt.Sprintf(`{"queue":"idle","kind":"ok","run_at":%q}`, at.Format(time.RFC3339Nano)))
	}
	for range 5 {
		submit(t, srv.URL, `{"queue":"work","kind":"ok"}`)
	}
	for range 2 {
		submit(t, srv.URL, `{"queue":"work","kind":"boom"}`)
	}
	submit(t, srv.URL, `{"queue":"work","kind":"flaky","max_attempts":2}`)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- eng.Run(runCtx) }()
	for range 5 + 2 + 2 { // the flaky job finishes twice
		select {
		case <-sig.outcomes:
		case <-ctx.Done():
			t.Fatal("the outcomes did not come")
		}
	}
	// The snapshot's age is the truth at some instant of the refresh:
	// between these two.
	ageBefore := time.Since(oldest).Seconds()
	if err := health.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	ageAfter := time.Since(oldest).Seconds()

	// Without a credential: 401.
	if resp, err := http.Get(srv.URL + "/metrics"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /metrics without a credential: %v %v", resp, err)
	}
	text, families := scrape(t, srv.URL)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("engine: %v", err)
	}

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"jobd_queue_jobs", map[string]string{"queue": "idle", "state": "queued"}, 4},
		{"jobd_queue_jobs", map[string]string{"queue": "idle", "state": "running"}, 0},
		{"jobd_queue_scheduled_jobs", map[string]string{"queue": "idle"}, 1},
		{"jobd_jobs_claimed_total", map[string]string{"queue": "work", "kind": "ok"}, 5},
		{"jobd_jobs_finished_total", map[string]string{"queue": "work", "kind": "ok", "outcome": "succeeded"}, 5},
		{"jobd_jobs_finished_total", map[string]string{"queue": "work", "kind": "boom", "outcome": "failed"}, 2},
		{"jobd_jobs_claimed_total", map[string]string{"queue": "work", "kind": "flaky"}, 2},
		{"jobd_jobs_finished_total", map[string]string{"queue": "work", "kind": "flaky", "outcome": "retried"}, 1},
		{"jobd_jobs_finished_total", map[string]string{"queue": "work", "kind": "flaky", "outcome": "succeeded"}, 1},
		{"jobd_job_run_seconds", map[string]string{"queue": "work", "kind": "ok"}, 5},
		{"jobd_job_wait_seconds", map[string]string{"queue": "work", "kind": "boom"}, 2},
		{"jobd_http_requests_total", map[string]string{"route": "POST /api/v1/jobs", "method": "POST", "code": "201"}, 12},
		{"jobd_sse_subscribers", nil, 0},
		{"jobd_build_info", map[string]string{"version": "test"}, 1},
	} {
		if got, ok := value(families, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	got, ok := value(families, "jobd_queue_oldest_available_age_seconds", map[string]string{"queue": "idle"})
	if !ok || got < ageBefore-1 || got > ageAfter+1 {
		t.Errorf("oldest available age %v (found %v), want within a second of %v..%v (the refresh)", got, ok, ageBefore, ageAfter)
	}
	if got, ok := value(families, "jobd_maintenance_leader", nil); !ok || (got != 0 && got != 1) {
		t.Errorf("jobd_maintenance_leader %v (found %v)", got, ok)
	}
	if got, ok := value(families, "jobd_db_pool_max_connections", nil); !ok || got < 1 {
		t.Errorf("jobd_db_pool_max_connections %v (found %v)", got, ok)
	}
	promtool(t, text)
}

func submit(t *testing.T, base, body string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/v1/jobs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer s3cret-admin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("submit %s: %d %s", body, resp.StatusCode, b)
	}
}

func scrape(t *testing.T, base string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer s3cret-admin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse the scrape: %v\n%s", err, b)
	}
	return string(b), families
}

// value is the value of the series of name whose labels include labels:
// a counter's or a gauge's value, a histogram's count.
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := families[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// promtool runs `promtool check metrics` on a scrape when promtool is
// installed (.ci/run installs it): it must report nothing.
func promtool(t *testing.T, text string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool is not installed; CI installs Debian's prometheus package for it")
		}
		t.Logf("promtool is not installed: skipping its check")
		return
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
