// Package web is jobd's dashboard: server-side pages under /ui/, served
// by jobd serve from templates, a style sheet and a small script embedded
// in the binary (no build step, no CDN, no framework). It is another
// client of the service layer the HTTP API uses: its reads are the
// store's read methods the API calls, and each of its actions calls
// exactly what the matching API handler calls (the store's JobCancel,
// JobRetry and JobRerun, WorkflowCancel and WorkflowRetry,
// QueueSetPaused, the scheduler's Pause, Resume and Trigger, the store's
// worker methods, the process runner's Submit, the gateway's
// DeleteResult); it holds no SQL and no rule of its own. Pages read
// without JavaScript; the script localises times, follows a job's
// progress over its event stream, refreshes the overview's counts from
// one summary endpoint, and recolours a running workflow's graph (drawn
// on the server as an SVG, graph.go) from another.
//
// Authentication: with an admin secret, the dashboard asks for a key once
// and keeps a session in the store, named by a random token in a cookie;
// a logout ends it on every node. Failed logins are slowed per client
// (throttle.go). Every form that changes state carries a token bound to
// the session and is refused (403) when it comes from another origin
// (session.go).
package web

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/flight"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Defaults of Config.
const (
	DefaultSessionTTL       = 12 * time.Hour
	DefaultThroughputWindow = 15 * time.Minute
	// DefaultScanLimit: see Config.ScanLimit.
	DefaultScanLimit = 10_000
	// pageSize is the rows of one page of a list.
	pageSize = 50
)

// Config configures the dashboard.
type Config struct {
	// Store is required.
	Store store.Store
	// AdminSecret turns authentication on, as it does for the API; the
	// sessions begun with it are bound to it (another secret refuses
	// them), and the forms' tokens are made with a key derived from it.
	AdminSecret string
	// JobStream serves a job's event stream (httpapi.NewJobStream, with
	// the request's path value "id"); required.
	JobStream http.Handler
	// Health returns the queue health snapshot the node keeps for its
	// metrics (telemetry.Health.Snapshot); nil, or a snapshot not taken
	// yet, reads the store's QueueHealth instead.
	Health func() (*store.Health, time.Time)
	// Leading reports whether this node leads maintenance; nil: unknown.
	Leading func() bool
	// Processes runs the durable processes; nil when there are none.
	Processes *process.Runner
	// Async is the async gateway; nil when there is none.
	Async *gateway.Gateway
	// Schedules applies the rules of the periodic schedules (the one the
	// API uses); nil: the dashboard shows none.
	Schedules *schedule.Scheduler
	// SessionTTL is how long a login lasts; default 12h, at most
	// store.MaxSessionTTL.
	SessionTTL time.Duration
	// ThroughputWindow is how far back the overview's chart goes, by the
	// minute; default 15m.
	ThroughputWindow time.Duration
	// ScanLimit is how many jobs a page of the jobs list looks at, at
	// most (store.ListParams.ScanLimit), whatever its filters match;
	// default 10 000.
	ScanLimit int
	// Clock defaults to clock.Real; Logger to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.ScanLimit <= 0 {
		c.ScanLimit = DefaultScanLimit
	}
	if c.ThroughputWindow <= 0 {
		c.ThroughputWindow = DefaultThroughputWindow
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// server holds the dashboard's dependencies.
type server struct {
	cfg   Config
	store store.Store
	auth  *httpapi.Authorizer
	keys  sessionKeys
	// sessions shares the lookups of a session among its requests.
	sessions *flight.Group[sessionID, *store.Session]
	logins   *loginThrottle
	pages    map[string]*template.Template
	log      *slog.Logger
	clock    clock.Clock
}

// New returns the dashboard's handler, which serves paths under /ui/.
// Mount puts it on a mux as jobd serve does.
func New(cfg Config) (http.Handler, error) {
	cfg = cfg.withDefaults()
	if cfg.Store == nil {
		return nil, errors.New("web: Config.Store is required")
	}
	if cfg.JobStream == nil {
		return nil, errors.New("web: Config.JobStream is required")
	}
	if cfg.SessionTTL > store.MaxSessionTTL {
		return nil, fmt.Errorf("web: Config.SessionTTL must be at most %s", store.MaxSessionTTL)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &server{
		cfg: cfg, store: cfg.Store, pages: pages, log: cfg.Logger, clock: cfg.Clock,
		auth:   httpapi.NewAuthorizer(cfg.Store, cfg.AdminSecret),
		keys:   deriveKeys(cfg.AdminSecret),
		logins: newLoginThrottle(cfg.Clock),
	}
	s.sessions = flight.New(s.lookupSession, sessionLookupTimeout)
	return s.routes(), nil
}

// Mount serves ui (New's handler) on mux at /ui/, and redirects / and
// /ui there.
func Mount(mux *http.ServeMux, ui http.Handler) {
	mux.Handle("/ui/", ui)
	toUI := http.RedirectHandler("/ui/", http.StatusFound)
	mux.Handle("GET /ui", toUI)
	mux.Handle("GET /{$}", toUI)
}

// routes is the dashboard's route table. Every POST is an action: its
// origin, session, token and scope are checked first (action).
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", staticHandler(static)))
	mux.HandleFunc("GET /ui/login", s.loginPage)
	mux.HandleFunc("POST /ui/login", s.login)
	mux.HandleFunc("POST /ui/logout", s.action("", s.logout))

	mux.HandleFunc("GET /ui/{$}", s.page(s.overview))
	mux.HandleFunc("GET /ui/summary", s.page(s.summary))
	mux.HandleFunc("POST /ui/queues/{name}/pause", s.action(scopeAdmin, s.pauseQueue))
	mux.HandleFunc("POST /ui/queues/{name}/resume", s.action(scopeAdmin, s.resumeQueue))

	mux.HandleFunc("GET /ui/jobs", s.page(s.jobs))
	mux.HandleFunc("POST /ui/jobs/bulk", s.action(scopeAdmin, s.bulk))
	mux.HandleFunc("GET /ui/jobs/{id}", s.page(s.job))
	mux.HandleFunc("GET /ui/jobs/{id}/items", s.page(s.items))
	mux.HandleFunc("GET /ui/jobs/{id}/stream", s.page(s.stream))
	mux.HandleFunc("POST /ui/jobs/{id}/cancel", s.action(scopeCancel, s.cancel))
	mux.HandleFunc("POST /ui/jobs/{id}/retry", s.action(scopeAdmin, s.retry))

	mux.HandleFunc("POST /ui/jobs/{id}/rerun", s.action(scopeAdmin, s.rerun))

	mux.HandleFunc("GET /ui/workflows", s.page(s.workflows))
	mux.HandleFunc("GET /ui/workflows/{id}", s.page(s.workflow))
	mux.HandleFunc("GET /ui/workflows/{id}/summary", s.page(s.workflowSummary))
	mux.HandleFunc("POST /ui/workflows/{id}/cancel", s.action(scopeCancel, s.cancelWorkflow))
	mux.HandleFunc("POST /ui/workflows/{id}/retry", s.action(scopeAdmin, s.retryWorkflow))

	mux.HandleFunc("GET /ui/schedules", s.page(s.schedules))
	mux.HandleFunc("POST /ui/schedules/{name}/pause", s.action(scopeAdmin, s.pauseSchedule))
	mux.HandleFunc("POST /ui/schedules/{name}/resume", s.action(scopeAdmin, s.resumeSchedule))
	mux.HandleFunc("POST /ui/schedules/{name}/trigger", s.action(scopeAdmin, s.triggerSchedule))

	mux.HandleFunc("GET /ui/workers", s.page(s.workers))
	mux.HandleFunc("POST /ui/workers/{id}/disable", s.action(scopeAdmin, s.disableWorker))
	mux.HandleFunc("POST /ui/workers/{id}/enable", s.action(scopeAdmin, s.enableWorker))
	mux.HandleFunc("POST /ui/workers/{id}/delete", s.action(scopeAdmin, s.deleteWorker))

	mux.HandleFunc("GET /ui/processes", s.page(s.processes))
	mux.HandleFunc("GET /ui/processes/{ns}/{id}", s.page(s.process))
	mux.HandleFunc("POST /ui/processes/{ns}/{id}/repair", s.action(scopeSubmit, s.repair))

	mux.HandleFunc("GET /ui/async", s.page(s.async))
	mux.HandleFunc("POST /ui/async/{id}/delete", s.action(scopeAdmin, s.deleteAsync))

	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, nil, notFound("no page %s", r.URL.Path))
	})
	return securityHeaders(s.refuseCrossSite(mux))
}

// refuseCrossSite refuses (403) a browser's request made for a page of
// another site (httpapi.CrossSite), but for a link followed from there
// to a page: a top-level navigation reads a page that site cannot see.
// The forms' own check (checkForm) stands behind it.
func (s *server) refuseCrossSite(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpapi.CrossSite(r, true) {
			v, err := s.viewerOf(r.Context(), r)
			if err == nil {
				err = errCrossOrigin
			}
			s.fail(w, r, &v, err) // with the browser's own session id, as checkForm's
			return
		}
		h.ServeHTTP(w, r)
	})
}

// securityHeaders sets what every answer of the dashboard carries: no
// framing (clickjacking), no sniffing, and a policy that allows only the
// dashboard's own script and style.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.ServeHTTP(w, r)
	})
}

// staticHandler serves the embedded style sheet and script, cacheable
// for an hour (they change only with the binary).
func staticHandler(files fs.FS) http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fileServer.ServeHTTP(w, r)
	})
}

// parsePages parses each page's template with the layout.
func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range []string{"overview", "jobs", "job", "workflows", "workflow", "schedules", "workers", "processes", "process", "async", "login", "error"} {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}
