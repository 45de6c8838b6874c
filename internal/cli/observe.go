package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/jobd/jobd/gateway"
	"github.com/jobd/jobd/internal/buildinfo"
	"github.com/jobd/jobd/internal/redact"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// secrets is every credential serve's configuration holds, which no log
// line may show: the admin secret, the database's password, the
// upstreams' and the processors' URL credentials (and the Basic header
// the gateway makes of an upstream's).
func (f *serveFlags) secrets(upstreams []gateway.Upstream, spaces []process.Namespace) *redact.Secrets {
	s := &redact.Secrets{}
	s.Add(f.adminSecret)
	s.AddURL(f.database)
	s.AddURL(f.pg.listen)
	for _, u := range upstreams {
		if u.URL == nil || u.URL.User == nil {
			continue
		}
		s.AddURL(u.URL.String())
		pass, _ := u.URL.User.Password()
		s.Add(base64.StdEncoding.EncodeToString([]byte(u.URL.User.Username() + ":" + pass)))
	}
	for _, ns := range spaces {
		if hp, ok := ns.Processor.(*process.HTTPProcessor); ok {
			s.AddURL(hp.URL)
			if u, err := url.Parse(hp.URL); err == nil && u.User != nil {
				pass, _ := u.User.Password()
				s.Add(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass)))
			}
		}
	}
	return s
}

// poolsOf returns st's pool reporter, if it has one.
func poolsOf(st store.Store) store.PoolReporter {
	p, _ := st.(store.PoolReporter)
	return p
}

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

// serveMetrics runs srv, the server of GET /metrics, on addr until stop
// is called.
func serveMetrics(ctx context.Context, logger *slog.Logger, addr string, srv *http.Server) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	logger.Info("jobd serving metrics", "addr", ln.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("metrics server", "err", err)
		}
	}, nil
}
