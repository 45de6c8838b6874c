// Package sqlite is jobd's embedded store: store.Store on a single SQLite
// file (modernc.org/sqlite, pure Go), so that jobd runs with no database
// server at all.
//
// The file is in WAL mode with synchronous=FULL: a job is durable, even
// across a power loss, once the call that wrote it returns, and a batch
// pays for one fsync. SQLite has one writer at a time, so writes go
// through one connection and every write transaction begins IMMEDIATE
// (it takes the write lock up front and never upgrades, so it cannot
// deadlock with another writer); reads use a pool of their own, which WAL
// lets run beside the writer. InTx runs several operations in one write
// transaction, reads included, and TxOf gives the caller that
// transaction for statements of its own.
//
// Wake-ups are in-process: Store values opened on one file in one process
// share a wakeup.Hub. Several processes on one file work (SQLite locks the
// file) but only wake each other through the workers' poll.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/wakeup"
)

// busyTimeoutMS is how long a connection waits for another one's lock
// (another process, or another Store on the same file) before SQLite
// reports SQLITE_BUSY.
const busyTimeoutMS = 10000

// Options configures a Store. Zero values take the defaults.
type Options struct {
	// Clock tells the time of every write; default clock.Real.
	Clock clock.Clock
	// Logger receives the store's rare messages (migrations applied);
	// default: discarded.
	Logger *slog.Logger
	// MaxArgsBytes limits a job's args; default job.DefaultMaxArgsBytes.
	MaxArgsBytes int
}

// Store is a jobd database in one SQLite file. It implements store.Store.
// Its Executor operations (the embedded executor's) each run in a write
// transaction of their own, or read on a reader; InTx runs several in one
// write transaction, and TxOf gives its *sql.Tx for the caller's own
// statements.
type Store struct {
	executor
	path      string
	closeOnce sync.Once
	closeErr  error
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Executor = (*executor)(nil)
)

// Open opens (creating it if needed) the SQLite database at path. It does
// not create the schema: call Migrate.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, errorf("sqlite: open %q: need a file path", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, errorf("sqlite: open %q: %w", path, err)
	}
	s := &Store{path: abs}
	s.executor = executor{
		clock:     opts.Clock,
		log:       opts.Logger,
		maxArgs:   opts.MaxArgsBytes,
		lastStamp: new(atomic.Int64),
		owner:     s,
	}
	if s.clock == nil {
		s.clock = clock.Real
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxArgs <= 0 {
		s.maxArgs = job.DefaultMaxArgsBytes
	}

	// The writer opens first: it turns WAL on (a setting of the file) before
	// any reader connects.
	s.w, err = openDB(dsn(abs, url.Values{
		"_txlock": {"immediate"},
		"_pragma": {
			fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS),
			"journal_mode(WAL)",
			"synchronous(FULL)",
			"foreign_keys(1)",
			"temp_store(MEMORY)", // temp.jobd_batch (batch_prepare.sql)
		},
	}))
	if err != nil {
		return nil, errorf("sqlite: open %s: %w", abs, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	// SQLite keeps the old journal mode, without an error, where WAL is
	// not possible (some network file systems); readers would then block
	// the writer.
	var mode string
	if err := s.w.QueryRowContext(ctx, journalModeSQL).Scan(&mode); err != nil {
		s.w.Close()
		return nil, errorf("sqlite: open %s: %w", abs, err)
	}
	if !strings.EqualFold(mode, "wal") {
		s.w.Close()
		return nil, errorf("sqlite: open %s: journal mode is %q, want WAL", abs, mode)
	}

	s.r, err = openDB(dsn(abs, url.Values{
		"_pragma": {
			fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS),
			"foreign_keys(1)",
			"query_only(1)",
		},
	}))
	if err != nil {
		s.w.Close()
		return nil, errorf("sqlite: open %s: %w", abs, err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	if err := s.r.PingContext(ctx); err != nil {
		s.w.Close()
		s.r.Close()
		return nil, errorf("sqlite: open %s: %w", abs, err)
	}

	s.hub, s.counted = acquireHub(abs)
	s.scheduler = wakeup.NewScheduler(s.clock, s.wakeQueue)
	return s, nil
}

// openDB opens a pool of connections to dsn that keep their statements
// prepared (openCached).
func openDB(dsn string) (*sql.DB, error) {
	c, err := openCached(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// dsn is the modernc.org/sqlite data source name of the file at abs: a
// "file:" URI, whose path escapes the characters URIs reserve, followed by
// the driver's parameters.
func dsn(abs string, params url.Values) string {
	path := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
	return "file:" + path + "?" + params.Encode()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return errorf("sqlite: ping: %w", err)
	}
	if err := s.r.PingContext(ctx); err != nil {
		return errorf("sqlite: ping: %w", err)
	}
	return nil
}

// Close stops the wake-up timers and closes the connections. Calling it
// again does nothing and returns the first call's error.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.scheduler.Close()
		releaseHub(s.path)
		s.closeErr = errors.Join(s.r.Close(), s.w.Close())
		if s.closeErr != nil {
			s.closeErr = errorf("sqlite: close: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// now is the store's current time, to the microsecond the database keeps.
func (s *executor) now() int64 { return s.clock.Now().UnixMicro() }

// writeTx runs fn in one IMMEDIATE transaction on the writer, committing
// when fn returns nil (or in the transaction s runs in). fn reads the
// clock itself, once the transaction has begun: its time then follows
// every write committed before it.
func (s *executor) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.atomically(ctx, func(ex *executor) error { return fn(ex.tx.sql) })
}

// jobWrite is a write transaction that changes jobs, with its times. Both
// are read after BEGIN IMMEDIATE took the file's write lock, so that write
// transactions, which hold that lock one at a time, read them in the order
// in which they commit.
type jobWrite struct {
	*sql.Tx
	// now is the clock's time: run_at, leases, started_at, finished_at,
	// the journal.
	now int64
	// stamp is the updated_at of every job the transaction changes: now,
	// unless that is not after the newest updated_at of the table (or the
	// last stamp this Store gave, which a delete may have taken from the
	// table), then 1µs after it. updated_at thus strictly increases in
	// commit order, even when the clock stands still or steps back, and a
	// reader of the "updated since" feed, which pages by (updated_at, id)
	// on a snapshot, never has a change commit behind its cursor.
	stamp int64
}

// jobsTx runs fn in one IMMEDIATE transaction on the writer, like
// writeTx, with the transaction's times: every job operation of one
// transaction (InTx's) shares them, as they share now() on PostgreSQL.
func (s *executor) jobsTx(ctx context.Context, fn func(w *jobWrite) error) error {
	return s.atomically(ctx, func(ex *executor) error {
		w, err := ex.jobWrite(ctx)
		if err != nil {
			return err
		}
		return fn(w)
	})
}

// readTx runs fn in one read transaction, so that its queries see one
// snapshot of the database, or in the transaction s runs in.
func (s *executor) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.tx != nil {
		return fn(s.tx.sql)
	}
	if err := store.CheckNotInTx(ctx, s.owner); err != nil {
		return err
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to lose
	return fn(tx)
}
