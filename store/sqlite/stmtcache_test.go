package sqlite

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
)

// openCachedTest opens a one-connection pool of openDB on a new file with
// a table of three numbers.
func openCachedTest(t *testing.T) *sql.DB {
	t.Helper()
	db, err := openDB(dsn(filepath.Join(t.TempDir(), "cache.db"), url.Values{"_txlock": {"immediate"}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	for _, q := range []string{"CREATE TABLE n (v INTEGER)", "INSERT INTO n VALUES (1), (2), (3)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func readInts(t *testing.T, rows *sql.Rows) []int {
	t.Helper()
	defer rows.Close()
	var got []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// A statement whose rows are still being read runs again, in the same
// transaction, with other arguments: both reads see their own rows.
func TestCachedStatementRunsAgainWhileItsRowsAreOpen(t *testing.T) {
	db := openCachedTest(t)
	const q = "SELECT v FROM n WHERE v >= ? ORDER BY v"
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	outer, err := tx.Query(q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var pairs [][2]int
	for outer.Next() {
		var v int
		if err := outer.Scan(&v); err != nil {
			t.Fatal(err)
		}
		inner, err := tx.Query(q, v+1)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, [2]int{v, len(readInts(t, inner))})
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{1, 2}, {2, 1}, {3, 0}}; !slices.Equal(pairs, want) {
		t.Fatalf("got (value, rows after it) %v, want %v", pairs, want)
	}
}

// The same text runs many times, by Query, Exec and Prepare, each seeing
// the arguments and writes of its own run.
func TestCachedStatementSeesEachRunsArguments(t *testing.T) {
	db := openCachedTest(t)
	ctx := context.Background()
	for i := range 5 {
		if _, err := db.ExecContext(ctx, "INSERT INTO n VALUES (?)", 10+i); err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, "SELECT v FROM n WHERE v >= ? ORDER BY v", 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := readInts(t, rows); len(got) != i+1 || got[i] != 10+i {
			t.Fatalf("run %d: got %v", i, got)
		}
		st, err := db.PrepareContext(ctx, "SELECT count(*) FROM n WHERE v < ?")
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := st.QueryRowContext(ctx, 10).Scan(&n); err != nil || n != 3 {
			t.Fatalf("run %d: prepared count %d, %v; want 3", i, n, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A text that does not prepare reports its error, every time.
	for range 2 {
		if _, err := db.ExecContext(ctx, "INSERT INTO missing VALUES (1)"); err == nil {
			t.Fatal("an insert into a missing table succeeded")
		}
	}
}
