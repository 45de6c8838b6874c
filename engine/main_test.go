package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/builtin"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// drivers names the stores every engine test runs against.
var drivers = []string{"sqlite", "postgres"}

// eachStore runs fn, in parallel, against a fresh migrated store of each
// driver.
func eachStore(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Parallel()
	for _, name := range drivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, openStore(t, name))
		})
	}
}

// stores returns a fresh migrated store of each driver, by name.
func stores(t testing.TB) map[string]store.Store {
	m := make(map[string]store.Store, len(drivers))
	for _, name := range drivers {
		m[name] = openStore(t, name)
	}
	return m
}

// openStore opens a fresh migrated store of driver name.
func openStore(t testing.TB, name string) store.Store {
	t.Helper()
	switch name {
	case "sqlite":
		return openAt(t, name, teststore.SQLitePath(t), true)
	case "postgres":
		return openAt(t, name, migrated.NewDatabase(t), true)
	}
	t.Fatalf("unknown driver %q", name)
	return nil
}

// openAt opens the store of driver name at dsn (a file path or a URL),
// closed when t ends, watched (storewatch) so that the tests wait for its
// writes.
func openAt(t testing.TB, name, dsn string, migrate bool) store.Store {
	t.Helper()
	ctx := context.Background()
	var (
		s   store.Store
		err error
	)
	switch name {
	case "sqlite":
		s, err = sqlite.Open(ctx, dsn, sqlite.Options{})
	case "postgres":
		s, err = postgres.Open(ctx, dsn, postgres.Options{Logger: discard})
	default:
		err = fmt.Errorf("unknown driver %q", name)
	}
	if err != nil {
		t.Fatalf("open %s store: %v", name, err)
	}
	t.Cleanup(func() { s.Close() })
	if migrate {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate %s store: %v", name, err)
		}
	}
	return storewatch.Wrap(s)
}

var discard = slog.New(slog.DiscardHandler)

// logs records an engine's log lines at Info and above for assertions,
// and prints them when the test fails.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func newLogs(t testing.TB) *logs {
	l := &logs{}
	t.Cleanup(func() {
		if t.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Logf("engine log:\n%s", strings.Join(l.lines, "\n"))
		}
	})
	return l
}

func (l *logs) logger() *slog.Logger { return slog.New(&logHandler{l: l}) }

// count returns how many recorded lines contain part.
func (l *logs) count(part string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, part) {
			n++
		}
	}
	return n
}

type logHandler struct {
	l     *logs
	attrs string
}

func (h *logHandler) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelInfo }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s%s", r.Time.Format("15:04:05.000"), r.Level, r.Message, h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.l.mu.Lock()
	h.l.lines = append(h.l.lines, b.String())
	h.l.mu.Unlock()
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &logHandler{l: h.l, attrs: h.attrs}
	for _, a := range as {
		n.attrs += fmt.Sprintf(" %s=%v", a.Key, a.Value)
	}
	return n
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }

// newEngine returns an engine on s with the built-in kinds and test-fast
// settings, logging into l; cfg's set fields win.
func newEngine(t testing.TB, s store.Store, l *logs, cfg engine.Config) *engine.Engine {
	t.Helper()
	cfg.Store = s
	if cfg.Logger == nil {
		cfg.Logger = l.logger()
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.ReaperInterval == 0 {
		cfg.ReaperInterval = 200 * time.Millisecond
	}
	e, err := engine.New(cfg)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	builtin.Register(e)
	return e
}

// queue is a worker pool on the default queue with a short backoff.
func queue(concurrency int) []engine.QueueConfig {
	return []engine.QueueConfig{{
		Queue:       job.DefaultQueue,
		Concurrency: concurrency,
		Backoff:     engine.Backoff{Kind: engine.BackoffLinear, Step: 10 * time.Millisecond},
	}}
}

// running is an engine's Run in progress.
type running struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// start runs e until stop (or the end of t).
func start(t testing.TB, e *engine.Engine) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- e.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels Run and returns its error; Run must return within a minute.
func (r *running) stop(t testing.TB) error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(time.Minute):
			r.err = fmt.Errorf("Run did not return within a minute of its context's end")
			t.Error(r.err)
		}
	})
	return r.err
}

// waitJob waits until ok says yes of the job, checking it after each
// write to the (watched) store, and returns it.
func waitJob(t testing.TB, s store.Store, id uuid.UUID, what string, ok func(*job.Job) bool) *job.Job {
	t.Helper()
	var j *job.Job
	storewatch.Until(t, s, fmt.Sprintf("job %s: %s", id, what), func() bool {
		var err error
		j, err = s.JobGet(context.Background(), id)
		if err != nil {
			t.Fatalf("JobGet: %v", err)
		}
		return ok(j)
	})
	return j
}

// waitState waits until the job reaches state.
func waitState(t testing.TB, s store.Store, id uuid.UUID, state job.State) *job.Job {
	t.Helper()
	return waitJob(t, s, id, "state "+string(state), func(j *job.Job) bool {
		if j.State.Final() && j.State != state {
			t.Fatalf("job %s ended %s (error %q), want %s", id, j.State, j.LastError, state)
		}
		return j.State == state
	})
}

// insert creates a job and returns it.
func insert(t testing.TB, s store.Store, p job.InsertParams) *job.Job {
	t.Helper()
	res, err := s.JobInsertMany(context.Background(), []job.InsertParams{p})
	if err != nil {
		t.Fatalf("insert %+v: %v", p, err)
	}
	return res[0].Job
}

// eventKinds returns the kinds of the job's journal, oldest first.
func eventKinds(t testing.TB, s store.Store, id uuid.UUID) []job.EventKind {
	t.Helper()
	evs, err := s.JobEvents(context.Background(), id)
	if err != nil {
		t.Fatalf("JobEvents: %v", err)
	}
	kinds := make([]job.EventKind, len(evs))
	for i, ev := range evs {
		kinds[i] = ev.Kind
	}
	return kinds
}
