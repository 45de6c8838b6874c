package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
)

func TestStartJobJoinsTheSubmittersTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := NewTracer(tp, func(s string) string { return strings.ReplaceAll(s, "hunter2", "[REDACTED]") })

	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	j := &job.Job{ID: uuid.New(), Queue: "q", Kind: "resize", Attempt: 2, TraceParent: parent}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx, sp := tr.StartJob(context.Background(), j, at)
	h := http.Header{}
	tr.Inject(ctx, h)
	sp.End(observe.Failed, "connect with password hunter2: refused", at.Add(3*time.Second))

	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if got := s.SpanContext.TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace id %s, want the submitter's", got)
	}
	if got := s.Parent.SpanID().String(); got != "b7ad6b7169203331" || !s.Parent.IsRemote() {
		t.Errorf("parent span %s (remote %v), want the submitter's b7ad6b7169203331", got, s.Parent.IsRemote())
	}
	if !s.StartTime.Equal(at) || s.EndTime.Sub(s.StartTime) != 3*time.Second {
		t.Errorf("span from %s to %s, want the claim to the outcome", s.StartTime, s.EndTime)
	}
	if s.Status.Description != "failed: connect with password [REDACTED]: refused" {
		t.Errorf("status %q", s.Status.Description)
	}
	want := "00-0af7651916cd43dd8448eb211c80319c-" + s.SpanContext.SpanID().String() + "-01"
	if got := h.Get("traceparent"); got != want {
		t.Errorf("injected traceparent %q, want %q (the execution's span)", got, want)
	}
	// Without a traceparent the execution is a root span.
	_, sp = tr.StartJob(context.Background(), &job.Job{ID: uuid.New(), Kind: "k"}, at)
	sp.End(observe.Succeeded, "", at)
	if root := exp.GetSpans()[1]; root.Parent.IsValid() {
		t.Errorf("a job without traceparent has parent %v", root.Parent)
	}
	// Inject without a span writes nothing.
	h = http.Header{}
	tr.Inject(trace.ContextWithSpanContext(context.Background(), trace.SpanContext{}), h)
	if len(h) != 0 {
		t.Errorf("Inject without a span wrote %v", h)
	}
}

func TestTracingIsOffByDefault(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	ctx := context.Background()
	for _, off := range []func(string) string{env(), env("OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
		env("OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "otlp")} {
		tp, err := TracerProviderFromEnv(ctx, off, "test")
		if tp != nil || err != nil {
			t.Errorf("tracing on (%v, %v), want off", tp, err)
		}
	}
	for _, on := range []func(string) string{env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), env("OTEL_TRACES_EXPORTER", "otlp")} {
		tp, err := TracerProviderFromEnv(ctx, on, "test")
		if tp == nil || err != nil {
			t.Fatalf("tracing off (%v, %v), want on", tp, err)
		}
		_ = tp.Shutdown(ctx)
	}
	for _, bad := range []func(string) string{env("OTEL_TRACES_EXPORTER", "zipkin"), env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")} {
		if _, err := TracerProviderFromEnv(ctx, bad, "test"); err == nil {
			t.Errorf("unsupported configuration accepted")
		}
	}
}

// TestNopCostsNothing: with tracing and metrics off the engine's calls
// allocate nothing.
func TestNopCostsNothing(t *testing.T) {
	var tr observe.Tracer = observe.Nop{}
	var jobs observe.Jobs = observe.Nop{}
	j := &job.Job{Kind: "k"}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		_, sp := tr.StartJob(ctx, j, time.Time{})
		rec := jobs.Kind("q", "k")
		rec.Started(time.Second)
		rec.Finished(observe.Succeeded, time.Second)
		sp.End(observe.Succeeded, "", time.Time{})
	})
	if allocs != 0 {
		t.Errorf("the no-op observer and tracer allocate %v times per job", allocs)
	}
}
