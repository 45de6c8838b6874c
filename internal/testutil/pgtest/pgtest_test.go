package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestNewDatabaseIsEmptyAndUsable(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("new database has %d tables, want 0", n)
	}
}

func TestTemplateCopies(t *testing.T) {
	ctx := context.Background()
	prepared := 0
	tp := NewTemplate(func(ctx context.Context, url string) error {
		prepared++
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "CREATE TABLE t (n int); INSERT INTO t VALUES (1)")
		return err
	})
	count := func(url string) int {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a, b := tp.NewDatabase(t), tp.NewDatabase(t)
	if prepared != 1 {
		t.Fatalf("template prepared %d times, want once", prepared)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if na, nb := count(a), count(b); na != 2 || nb != 1 {
		t.Fatalf("rows: %d in the written copy, %d in the other; want 2 and 1", na, nb)
	}
}

// TestClusterRestart: what committed before an immediate restart is
// there after it, and the server answers again on the same URL, with
// the settings the cluster was made with.
func TestClusterRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := NewCluster(t, "max_connections=42")
	if err := exec1(ctx, cl.URL(), "CREATE TABLE t (n int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT n FROM t").Scan(&n); err != nil || n != 42 {
		t.Fatalf("after the restart: n = %d, %v; want 42", n, err)
	}
	var max string
	if err := conn.QueryRow(ctx, "SHOW max_connections").Scan(&max); err != nil || max != "42" {
		t.Fatalf("after the restart: max_connections %q, %v; want 42", max, err)
	}
}
