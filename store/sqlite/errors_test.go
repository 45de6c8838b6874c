package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store"
)

// TestErrorsMarked: SQLite's own errors are marked by their cause (issue
// 10, defect 8): a file that cannot be opened is store.ErrUnavailable, a
// value over SQLite's length limit store.ErrRefused, and a write lock
// held past the busy timeout (another connection writing) neither.
func TestErrorsMarked(t *testing.T) {
	ctx := context.Background()

	_, err := Open(ctx, filepath.Join(t.TempDir(), "missing", "dir", "jobd.db"), Options{})
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrRefused) {
		t.Errorf("Open in a directory that does not exist: %v, want store.ErrUnavailable", err)
	}

	s := openAt(t, filepath.Join(t.TempDir(), "jobd.db"), clock.Real)
	var n int
	err = s.r.QueryRowContext(ctx, "SELECT length(zeroblob(2000000000))").Scan(&n)
	if err = classify(err); !errors.Is(err, store.ErrRefused) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a blob over SQLite's length limit: %v, want store.ErrRefused", err)
	}

	other, err := sql.Open("sqlite", dsn(s.path, url.Values{"_pragma": {"busy_timeout(0)"}, "_txlock": {"immediate"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback() }()
	busy, err := sql.Open("sqlite", dsn(s.path, url.Values{"_pragma": {"busy_timeout(0)"}, "_txlock": {"immediate"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tx, err := busy.BeginTx(ctx, nil)
	if err == nil {
		_ = tx.Rollback()
		t.Fatal("a second writer began while the first held the lock")
	}
	if err = classify(err); errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrRefused) {
		t.Errorf("a write lock held past the busy timeout: %v, want neither unavailable nor refused", err)
	}
}
