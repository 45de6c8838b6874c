package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
)

// BenchmarkJobMetrics is what the metrics cost the engine per job: a
// start and an outcome recorded on series resolved once.
func BenchmarkJobMetrics(b *testing.B) {
	m := NewMetrics(Config{})
	rec := m.Kind("q", "k")
	b.ReportAllocs()
	for b.Loop() {
		rec.Started(time.Millisecond)
		rec.Finished(observe.Succeeded, time.Millisecond)
	}
}

// BenchmarkJobSpan is what tracing costs the engine per job: a span
// started and ended, batched to an exporter that drops it.
func BenchmarkJobSpan(b *testing.B) {
	tp := DiscardingTracerProvider()
	defer tp.Shutdown(context.Background())
	tr := NewTracer(tp, nil)
	j := &job.Job{ID: uuid.New(), Queue: "q", Kind: "k", Attempt: 1,
		TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	ctx := context.Background()
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_, sp := tr.StartJob(ctx, j, at)
		sp.End(observe.Succeeded, "", at)
	}
}

// BenchmarkJobNop is the cost with metrics and tracing off.
func BenchmarkJobNop(b *testing.B) {
	var tr observe.Tracer = observe.Nop{}
	var jobs observe.Jobs = observe.Nop{}
	rec := jobs.Kind("q", "k")
	j := &job.Job{Kind: "k"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, sp := tr.StartJob(ctx, j, time.Time{})
		rec.Started(time.Millisecond)
		rec.Finished(observe.Succeeded, time.Millisecond)
		sp.End(observe.Succeeded, "", time.Time{})
	}
}
