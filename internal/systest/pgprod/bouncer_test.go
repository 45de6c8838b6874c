package pgprod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
)

// errorLog is a slog handler that keeps the records at level Error and
// those that name a prepared statement (PostgreSQL's errors do: prepared
// statement "stmtcache_…" does not exist), whatever their level.
type errorLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *errorLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *errorLog) WithGroup(string) slog.Handler            { return l }

func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	text := b.String()
	if r.Level >= slog.LevelError || strings.Contains(text, `prepared statement "`) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Level.String()+" "+text)
		l.mu.Unlock()
	}
	return nil
}

func (l *errorLog) records() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// bouncerDatabase makes a migrated database on the test server and a
// PgBouncer in front of the server, and returns the database's URLs:
// through the bouncer, and direct.
func bouncerDatabase(t *testing.T) (bounced, direct string) {
	t.Helper()
	direct = migrated.NewDatabase(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	b := pgtest.NewBouncer(t, pgtest.Server(t))
	return b.URL("postgres", strings.TrimPrefix(u.Path, "/")), direct
}

// TestPgBouncer opens stores through a real PgBouncer in transaction
// pooling mode (default settings otherwise) and works jobs through them:
// two engines at once, each store a pool of several connections over
// PgBouncer's, with jobs that succeed, fail once and retry (a
// transaction of two round trips), and report progress. PgBouncer is
// detected by its refusal of the startup parameter (the store then sends
// none and prepares no statement); without a listen URL the engines find
// the jobs at their poll and the term alone elects the leader; with
// --listen-database's URL they LISTEN and hold the leader's presence
// there. No error is logged, none about a prepared statement. On a jobd
// that sends random_page_cost at startup, the store cannot even open.
func TestPgBouncer(t *testing.T) {
	t.Parallel()
	bounced, direct := bouncerDatabase(t)

	t.Run("PoolerNone", func(t *testing.T) {
		// Told that the URL is PostgreSQL itself, the store sends its
		// startup parameter, which PgBouncer refuses: what auto detects.
		_, err := postgres.Open(t.Context(), bounced, postgres.Options{Pooler: postgres.PoolerNone, Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), "unsupported startup parameter") {
			t.Fatalf("Open through PgBouncer as PostgreSQL itself: %v, want PgBouncer's refusal of the startup parameter", err)
		}
	})
	for _, tc := range []struct {
		name   string
		opts   postgres.Options
		poll   time.Duration
		direct bool
	}{
		// Detected, no direct connection: the jobs are found at the poll.
		{"DetectedPolling", postgres.Options{}, 50 * time.Millisecond, false},
		// Given, with a direct connection: LISTEN wakes the workers, whose
		// poll never comes within the test.
		{"ListenDatabase", postgres.Options{Pooler: postgres.PoolerTransaction, ListenURL: direct}, time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &errorLog{}
			var stores []store.Store
			for range 2 {
				opts := tc.opts
				opts.Logger = slog.New(logs)
				st, err := postgres.Open(t.Context(), bounced, opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				if pooled, hasDirect := st.Pooled(); !pooled || hasDirect != tc.direct {
					t.Fatalf("Pooled() = %t, %t; want true, %t", pooled, hasDirect, tc.direct)
				}
				stores = append(stores, st)
			}
			if err := stores[0].Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate through PgBouncer: %v", err)
			}
			engines := make([]*engine.Engine, len(stores))
			for i, st := range stores {
				engines[i] = startBouncedEngine(t, st, fmt.Sprintf("node%d", i), tc.poll, slog.New(logs))
			}
			ids := insertMixed(t, stores[0], 300)
			waitAllSucceeded(t, stores[1], ids)
			waitLeader(t, engines)
			if tc.direct {
				waitPresences(t, direct, len(stores))
			}
			if got := logs.records(); len(got) > 0 {
				t.Errorf("%d records logged at level Error or about prepared statements, first: %q", len(got), got[:min(5, len(got))])
			}
		})
	}
}

// startBouncedEngine runs an engine on st with the test's kinds until the
// test ends.
func startBouncedEngine(t *testing.T, st store.Store, node string, poll time.Duration, logger *slog.Logger) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{Store: st, Node: node, Logger: logger, PollInterval: poll,
		Queues: []engine.QueueConfig{{Queue: "q", Concurrency: 8, Backoff: engine.Backoff{Kind: engine.BackoffLinear, Step: time.Millisecond}}}})
	if err != nil {
		t.Fatal(err)
	}
	engine.Register(e, "ok", func(ctx context.Context, j *engine.Job[json.RawMessage]) (struct{}, error) {
		return struct{}{}, nil
	})
	engine.Register(e, "retry", func(ctx context.Context, j *engine.Job[json.RawMessage]) (struct{}, error) {
		if j.Attempt == 1 {
			return struct{}{}, errors.New("the first attempt fails on purpose")
		}
		return struct{}{}, nil
	})
	engine.Register(e, "progress", func(ctx context.Context, j *engine.Job[json.RawMessage]) (struct{}, error) {
		j.SetProgress(job.Progress{Phase: "working", Done: 1, Total: 2})
		return struct{}{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("engine %s: %v", node, err)
		}
	})
	return e
}

// insertMixed inserts n jobs of the three kinds, in batches, and returns
// their ids.
func insertMixed(t *testing.T, st store.Store, n int) []uuid.UUID {
	t.Helper()
	kinds := []string{"ok", "retry", "progress"}
	var ids []uuid.UUID
	for from := 0; from < n; from += 50 {
		ps := make([]job.InsertParams, min(50, n-from))
		for i := range ps {
			ps[i] = job.InsertParams{Queue: "q", Kind: kinds[(from+i)%len(kinds)], MaxAttempts: 3}
		}
		res, err := st.JobInsertMany(t.Context(), ps)
		if err != nil {
			t.Fatalf("insert through PgBouncer: %v", err)
		}
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
	}
	return ids
}

// waitAllSucceeded polls the jobs until all succeeded (at most two
// minutes); a job that failed or was canceled fails the test at once.
func waitAllSucceeded(t *testing.T, st store.Store, ids []uuid.UUID) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	left := ids
	for len(left) > 0 {
		var still []uuid.UUID
		for _, id := range left {
			j, err := st.JobGet(t.Context(), id)
			if err != nil {
				t.Fatalf("job %s: %v", id, err)
			}
			switch j.State {
			case job.StateSucceeded:
			case job.StateFailed, job.StateCanceled:
				t.Fatalf("job %s (%s) ended %s: %s", id, j.Kind, j.State, j.LastError)
			default:
				still = append(still, id)
			}
		}
		left = still
		if len(left) > 0 && time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs not succeeded after two minutes", len(left), len(ids))
		}
		if len(left) > 0 {
			time.Sleep(20 * time.Millisecond) // a poll bounded by the deadline
		}
	}
}

// waitLeader waits (at most a minute) until one of the engines leads.
func waitLeader(t *testing.T, engines []*engine.Engine) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, e := range engines {
			if e.Leading() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no engine leads a minute on")
		}
		time.Sleep(20 * time.Millisecond) // a poll bounded by the deadline
	}
}

// waitPresences waits (at most a minute) until n jobd-leader sessions
// hold a presence lock on the database of the direct URL.
func waitPresences(t *testing.T, direct string, n int) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	deadline := time.Now().Add(time.Minute)
	for {
		var held int
		err := conn.QueryRow(t.Context(), `SELECT count(DISTINCT a.pid) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'jobd-leader' AND a.datname = current_database()`).Scan(&held)
		if err != nil {
			t.Fatal(err)
		}
		if held >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobd-leader sessions hold a presence lock a minute on, want %d", held, n)
		}
		time.Sleep(20 * time.Millisecond) // a poll bounded by the deadline
	}
}

// TestServeBehindPgBouncer runs `jobd serve` behind PgBouncer with no
// pooler flag (detected) and --listen-database, its poll an hour away:
// jobs submitted through the HTTP API run (LISTEN on the direct URL),
// a 1 s schedule ticks (the leader's duties through the pooler), and the
// node logs no error.
func TestServeBehindPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("the production PostgreSQL tier (real jobd serve nodes) runs without -short")
	}
	t.Parallel()
	bounced, direct := bouncerDatabase(t)
	dir := logDir(t)
	n := startNode(t, dir, "bounced", "--database", bounced, "--listen-database", direct,
		"--poll-interval", "1h", "--workers", `[{"queue":"default","concurrency":4}]`,
		"--schedules", `[{"name":"tick","cron":"@every 1s","job":{"kind":"noop","queue":"ticks"}}]`)
	c, err := client.New(n.url(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for i := range 20 {
		j, _, err := c.Submit(ctx, api.SubmitRequest{Kind: "sleep", Args: json.RawMessage(`{"ms":5}`)})
		if err != nil {
			t.Fatalf("submit %d: %v", i, err)
		}
		done, err := c.Wait(ctx, j.ID, nil)
		if err != nil {
			t.Fatalf("wait for job %d: %v", i, err)
		}
		if done.State != api.State(job.StateSucceeded) {
			t.Fatalf("job %d ended %s", i, done.State)
		}
	}
	conn, err := pgx.Connect(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := waitTicks(ctx, conn, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(n.log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "as PgBouncer does") {
		t.Errorf("the node did not say it detected PgBouncer; its log ends:\n%s", tail(n.log, 20))
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "level=ERROR") || strings.Contains(line, `prepared statement "`) {
			t.Errorf("logged: %s", line)
		}
	}
}
