package cli

import (
	"context"
	"log/slog"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/jobd/jobd/internal/buildinfo"
	"github.com/jobd/jobd/internal/redact"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// tracingShutdownTimeout bounds the flush of the spans at exit.
const tracingShutdownTimeout = 5 * time.Second

// startTracing returns the tracer the OTEL_* environment asks for (the
// no-op one by default) and the function that flushes it at exit.
func startTracing(ctx context.Context, env *Env, logger *slog.Logger, secrets *redact.Secrets) (observe.Tracer, func(), error) {
	tp, err := telemetry.TracerProviderFromEnv(ctx, env.Getenv, buildinfo.Version())
	if err != nil {
		return nil, nil, err
	}
	if tp == nil {
		return observe.Nop{}, func() {}, nil
	}
	logger.Info("tracing on: spans go by OTLP over HTTP (OTEL_* environment)")
	return telemetry.NewTracer(tp, secrets.Redact), func() { shutdownTracing(ctx, tp, logger) }, nil
}

func shutdownTracing(ctx context.Context, tp *sdktrace.TracerProvider, logger *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdownTimeout)
	defer cancel()
	if err := tp.Shutdown(sctx); err != nil {
		logger.Warn("tracing: flushing spans at exit", "err", err)
	}
}

// poolsOf returns st's pool reporter, if it has one.
func poolsOf(st store.Store) store.PoolReporter {
	p, _ := st.(store.PoolReporter)
	return p
}
