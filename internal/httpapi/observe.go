package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// Observer is what the API reports to, for metrics and traces. Nil
// fields record nothing.
type Observer struct {
	// Jobs records the remote workers' claims and outcomes.
	Jobs observe.Jobs
	// HTTP records the open event streams (Instrument records requests).
	HTTP observe.HTTP
	// Process records the process stages the API sees: notification
	// and removal.
	Process observe.Process
	// Tracer makes each remote execution a span of its job's trace.
	Tracer observe.Tracer
	// Workflows records the workflows the API creates.
	Workflows observe.Workflows
}

func (o Observer) withDefaults() Observer {
	if o.Jobs == nil {
		o.Jobs = observe.Nop{}
	}
	if o.HTTP == nil {
		o.HTTP = observe.Nop{}
	}
	if o.Process == nil {
		o.Process = observe.Nop{}
	}
	if o.Tracer == nil {
		o.Tracer = observe.Nop{}
	}
	if o.Workflows == nil {
		o.Workflows = observe.Nop{}
	}
	return o
}

// logTransition logs, at debug, a transition of j the API made.
func (s *server) logTransition(r *http.Request, what string, j *job.Job) {
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.DebugContext(r.Context(), what, "job_id", j.ID, "queue", j.Queue, "kind", j.Kind,
			"attempt", j.Attempt, "state", j.State, "request_id", RequestID(r.Context()))
	}
}

// RequestIDHeader carries a request's id, which Instrument honours (when
// the caller sent a sane one) or makes, and echoes.
const RequestIDHeader = "X-Request-Id"

// maxRequestID bounds a caller's request id; a longer (or unprintable)
// one is replaced.
const maxRequestID = 128

type requestIDKey struct{}

// RequestID returns the id Instrument gave ctx's request, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// InstrumentConfig configures Instrument.
type InstrumentConfig struct {
	// Logger logs each request once; default slog.Default().
	Logger *slog.Logger
	// Observer records each request; default observe.Nop.
	Observer observe.HTTP
	// Clock times requests; default clock.Real.
	Clock clock.Clock
}

// Instrument wraps next, the whole HTTP surface (API, gateway), so that
// every request has an id (X-Request-Id, the caller's when sane, else a
// new one, echoed in the answer and in RequestID of its context), is
// logged once when answered (id, method, route pattern, status, duration;
// never its query, headers or body) and is recorded by the observer under
// the route pattern that served it.
func Instrument(next http.Handler, cfg InstrumentConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = observe.Nop{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := cfg.Clock.Now()
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		r = r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			took := cfg.Clock.Now().Sub(began)
			status := sw.status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http answers 200
			}
			// r.Pattern is set by the innermost mux that routed r.
			route := r.Pattern
			cfg.Observer.Request(route, r.Method, status, took)
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelWarn
			}
			cfg.Logger.LogAttrs(r.Context(), level, "http request",
				slog.String("request_id", id), slog.String("method", r.Method), slog.String("route", routeOrPath(route)),
				slog.Int("status", status), slog.Duration("duration", took))
		}()
		next.ServeHTTP(sw, r)
	})
}

// routeOrPath names the route for the log: its pattern, or "unmatched".
func routeOrPath(route string) string {
	if route == "" {
		return "unmatched"
	}
	return route
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter remembers the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// since is the time since t by the server's clock.
func (s *server) since(t time.Time) time.Duration { return s.clock.Now().Sub(t) }

// MetricsHandler serves GET /metrics alone, as the API does (the metrics
// scope, or admin, when adminSecret is set, unless public), for a
// listener of its own (jobd serve --metrics-listen).
func MetricsHandler(st store.Store, adminSecret string, public bool, metrics http.Handler, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	s := &server{cfg: Config{Metrics: metrics, MetricsPublic: public}, store: st, log: logger, clock: clock.Real,
		auth: newAuthenticator(st, adminSecret)}
	mux := http.NewServeMux()
	rt := route{"GET", "/metrics", s.metricsScope(), s.metrics}
	mux.Handle(rt.pattern(), s.wrap(rt))
	return &root{mux: mux, s: s}
}
