package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
)

// instrumentation names jobd's tracer.
const instrumentation = "github.com/jobd/jobd"

// maxSpanError caps the error text a span carries.
const maxSpanError = 1024

// Tracer makes each execution of a job a span of the trace its submitter
// started (the job's traceparent), and propagates the execution's
// context to the calls it makes. It implements observe.Tracer.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
	redact func(string) string
}

var _ observe.Tracer = (*Tracer)(nil)

// NewTracer returns a Tracer over tp. redact masks the secrets of an
// error text before a span carries it (nil: none).
func NewTracer(tp trace.TracerProvider, redact func(string) string) *Tracer {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &Tracer{tracer: tp.Tracer(instrumentation), redact: redact}
}

// StartJob starts the span of one execution of j, claimed at at, as a
// child of j's traceparent (a root span without one).
func (t *Tracer) StartJob(ctx context.Context, j *job.Job, at time.Time) (context.Context, observe.Span) {
	if j.TraceParent != "" {
		ctx = t.prop.Extract(ctx, propagation.MapCarrier{"traceparent": j.TraceParent})
	}
	ctx, s := t.tracer.Start(ctx, "run "+j.Kind, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(at),
		trace.WithAttributes(
			attribute.String("messaging.system", "jobd"),
			attribute.String("messaging.destination.name", j.Queue),
			attribute.String("jobd.job.id", j.ID.String()),
			attribute.String("jobd.job.queue", j.Queue),
			attribute.String("jobd.job.kind", j.Kind),
			attribute.Int("jobd.job.attempt", j.Attempt),
		))
	return ctx, &span{s: s, redact: t.redact}
}

// Inject writes the traceparent of ctx's span into h.
func (t *Tracer) Inject(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// span is one execution's span.
type span struct {
	s      trace.Span
	redact func(string) string
}

func (s *span) End(o observe.Outcome, errText string, at time.Time) {
	s.s.SetAttributes(attribute.String("jobd.job.outcome", o.String()))
	switch o {
	case observe.Succeeded, observe.Released:
		s.s.SetStatus(codes.Ok, "")
	default:
		desc := o.String()
		if errText != "" {
			desc += ": " + s.redact(job.CutText(errText, maxSpanError))
		}
		s.s.SetStatus(codes.Error, desc)
	}
	s.s.End(trace.WithTimestamp(at))
}

// DiscardingTracerProvider returns a provider that samples every span
// and batches it to an exporter that drops it: the whole cost of tracing
// but the network's (jobd bench --tracing).
func DiscardingTracerProvider() *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// TracerProviderFromEnv returns the tracer provider the standard OTEL_*
// environment variables ask for, read by getenv, or nil when tracing is
// off, as it is by default. Tracing is on when OTEL_TRACES_EXPORTER is
// "otlp", or when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; off with OTEL_SDK_DISABLED=true
// or OTEL_TRACES_EXPORTER=none. Spans go by OTLP over HTTP (the exporter
// reads its endpoint, headers, timeout and compression from the same
// variables); the sampler (OTEL_TRACES_SAMPLER), the batching (OTEL_BSP_*)
// and the resource (OTEL_SERVICE_NAME, default "jobd";
// OTEL_RESOURCE_ATTRIBUTES) are the SDK's. Shut the provider down to
// flush its spans.
func TracerProviderFromEnv(ctx context.Context, getenv func(string) string, version string) (*sdktrace.TracerProvider, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	switch exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exporter {
	case "none":
		return nil, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: jobd exports traces by otlp only (or none)", exporter)
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: jobd exports OTLP over HTTP (http/protobuf) only", protocol)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "jobd"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
