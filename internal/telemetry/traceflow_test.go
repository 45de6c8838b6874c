package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/store"
)

// ended signals each span that ends.
type ended struct{ ch chan sdktrace.ReadOnlySpan }

func (e ended) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e ended) OnEnd(s sdktrace.ReadOnlySpan)                   { e.ch <- s }
func (e ended) Shutdown(context.Context) error                  { return nil }
func (e ended) ForceFlush(context.Context) error                { return nil }

const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerParent = "00f067aa0ba902b7"
	traceparent  = "00-" + callerTrace + "-" + callerParent + "-01"
)

// TestTraceFlow: a traceparent sent on submit is stored with the job,
// and each execution is a span of that trace, a child of the caller's
// span: in the engine, for a remote worker (claim to complete, over the
// worker protocol), and for an async gateway request, whose upstream
// receives the execution's span as its parent. On both stores.
func TestTraceFlow(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			testTraceFlow(t, openStore(t, driver))
		})
	}
}

func testTraceFlow(t *testing.T, st store.Store) {
	// A guard against a hang, not a deadline the test measures.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	exp := tracetest.NewInMemoryExporter()
	spans := ended{make(chan sdktrace.ReadOnlySpan, 16)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	tracer := telemetry.NewTracer(tp, nil)

	gotParent := make(chan string, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotParent <- r.Header.Get("traceparent")
		io.WriteString(w, "ok")
	}))
	defer upstream.Close()
	upURL, _ := url.Parse(upstream.URL)

	eng, err := engine.New(engine.Config{Store: st, Logger: discard, Tracer: tracer, Listen: true,
		Queues: []engine.QueueConfig{{Queue: "work", Concurrency: 2}, {Queue: gateway.Queue, Concurrency: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	engine.Register(eng, "ok", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) { return "done", nil })
	gw, err := gateway.New(gateway.Config{Store: st, Engine: eng, Logger: discard, Tracer: tracer,
		Upstreams: []gateway.Upstream{{Name: "up", URL: upURL}}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Config{Store: st, Logger: discard, Async: gw.Results(),
		Observer: httpapi.Observer{Tracer: tracer}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/gw/", gw.Handler())
	mux.Handle("/", api)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- eng.Run(runCtx) }()
	defer func() { stop(); <-done }()

	post := func(path, body string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		if strings.HasPrefix(path, "/api/") {
			req.Header.Set("Content-Type", "application/json") // the gateway's /gw/ bodies are any
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	wantChild := func(what string) sdktrace.ReadOnlySpan {
		t.Helper()
		var s sdktrace.ReadOnlySpan
		select {
		case s = <-spans.ch:
		case <-ctx.Done():
			t.Fatalf("%s: no span ended", what)
		}
		if s.SpanContext().TraceID().String() != callerTrace || s.Parent().SpanID().String() != callerParent {
			t.Fatalf("%s: span %q in trace %s under %s; want trace %s under %s", what, s.Name(),
				s.SpanContext().TraceID(), s.Parent().SpanID(), callerTrace, callerParent)
		}
		return s
	}

	// In the engine.
	if resp, body := post("/api/v1/jobs", `{"queue":"work","kind":"ok"}`, "traceparent", traceparent); resp.StatusCode != http.StatusCreated ||
		!strings.Contains(body, `"trace_parent":"`+traceparent+`"`) {
		t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	if s := wantChild("engine"); s.Name() != "run ok" {
		t.Errorf("engine span named %q", s.Name())
	}

	// An async gateway request: the upstream is called under the span.
	resp, _ := post("/gw/up/x", "", "X-Async", "store", "traceparent", traceparent)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("async request: %d", resp.StatusCode)
	}
	var upParent string
	select {
	case upParent = <-gotParent:
	case <-ctx.Done():
		t.Fatal("the upstream was not called")
	}
	s := wantChild("gateway")
	if want := "00-" + callerTrace + "-" + s.SpanContext().SpanID().String() + "-01"; upParent != want {
		t.Errorf("the upstream got traceparent %q, want the execution's %q", upParent, want)
	}

	// A remote worker, claim to complete.
	key := registerWorker(t, srv.URL)
	if resp, body := post("/api/v1/jobs", `{"queue":"remote","kind":"ok"}`, "traceparent", traceparent); resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	_, body := post("/api/v1/worker/claim", `{"queues":["remote"],"max":1}`, "Authorization", "Bearer "+key)
	id := field(body, "id")
	token := field(body, "lease_token")
	if id == "" || token == "" || !strings.Contains(body, traceparent) {
		t.Fatalf("claim: %s", body)
	}
	if resp, body := post("/api/v1/worker/jobs/"+id+"/complete", `{"lease_token":"`+token+`"}`, "Authorization", "Bearer "+key); resp.StatusCode != http.StatusOK {
		t.Fatalf("complete: %d %s", resp.StatusCode, body)
	}
	if s := wantChild("remote worker"); s.Name() != "run ok" {
		t.Errorf("remote span named %q", s.Name())
	}
}

func registerWorker(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Post(base+"/api/v1/workers", "application/json", strings.NewReader(`{"name":"w"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	key := field(string(b), "api_key")
	if key == "" {
		t.Fatalf("register worker: %d %s", resp.StatusCode, b)
	}
	return key
}

// field is the first string member name of a JSON text.
func field(body, name string) string {
	_, rest, ok := strings.Cut(body, `"`+name+`":"`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}
