package telemetry_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/store"
)

// TestScrapeFlowControl: a handler throttles its queue once; a scrape then
// counts the throttle, shows when the queue's throttle ends and the
// limits of the queues that have any (0 for a queue whose limits were
// cleared since), and passes promtool's check. On both stores.
func TestScrapeFlowControl(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			testScrapeFlow(t, openStore(t, driver))
		})
	}
}

func testScrapeFlow(t *testing.T, st store.Store) {
	ctx := t.Context()
	if err := st.QueueSetLimits(ctx, "limited", flow.Limits{GlobalLimit: 5, PartitionLimit: 2,
		Rate: &flow.Rate{Limit: 120, Period: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if err := st.QueueSetLimits(ctx, "cleared", flow.Limits{GlobalLimit: 1}); err != nil {
		t.Fatal(err)
	}
	m := telemetry.NewMetrics(telemetry.Config{Version: "test"})
	sig := &finishSignal{Metrics: m, outcomes: make(chan struct{}, 10)}
	eng, err := engine.New(engine.Config{Store: st, Logger: discard, Observer: sig,
		Queues: []engine.QueueConfig{{Queue: "work", Concurrency: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	engine.Register(eng, "call", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
		if runs.Add(1) == 1 {
			return "", engine.Throttle(errors.New("429 Too Many Requests"), time.Hour)
		}
		return "done", nil
	})
	health := m.WatchHealth(telemetry.HealthConfig{Source: st, Logger: discard})
	api, err := httpapi.New(httpapi.Config{Store: st, Logger: discard, AdminSecret: "s3cret-admin", Metrics: m.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	submit(t, srv.URL, `{"queue":"work","kind":"call"}`)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- eng.Run(runCtx) }()
	select {
	case <-sig.outcomes:
	case <-ctx.Done():
		t.Fatal("the outcome did not come")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("engine: %v", err)
	}
	if err := health.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if err := st.QueueSetLimits(ctx, "cleared", flow.Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := health.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	text, families := scrape(t, srv.URL)
	inAnHour := float64(time.Now().Add(time.Hour).Unix())
	for _, c := range []struct {
		name     string
		labels   map[string]string
		min, max float64
	}{
		{"jobd_job_throttles_total", map[string]string{"queue": "work"}, 1, 1},
		{"jobd_jobs_finished_total", map[string]string{"queue": "work", "kind": "call", "outcome": "retried"}, 1, 1},
		{"jobd_queue_throttled_until_seconds", map[string]string{"queue": "work"}, inAnHour - 120, inAnHour + 1},
		{"jobd_queue_throttled_until_seconds", map[string]string{"queue": "limited"}, 0, 0},
		{"jobd_queue_global_limit", map[string]string{"queue": "limited"}, 5, 5},
		{"jobd_queue_partition_limit", map[string]string{"queue": "limited"}, 2, 2},
		{"jobd_queue_rate_limit_per_second", map[string]string{"queue": "limited"}, 2, 2},
		{"jobd_queue_global_limit", map[string]string{"queue": "cleared"}, 0, 0},
	} {
		if got, ok := value(families, c.name, c.labels); !ok || got < c.min || got > c.max {
			t.Errorf("%s%v = %v (found %v), want %v..%v", c.name, c.labels, got, ok, c.min, c.max)
		}
	}
	promtool(t, text)
}
