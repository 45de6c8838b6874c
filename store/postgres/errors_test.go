package postgres

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/store"
)

// TestErrorsMarked: PostgreSQL's errors are marked by their cause (issue
// 10, defect 8): a server that cannot be reached, or has no connection
// slot left, is store.ErrUnavailable,
// a value the server refuses (text with NUL, jsonb's \u0000) is
// store.ErrRefused, and other errors are neither. The outage of a running
// server is TestDatabaseDownIs503's (httpapi).
func TestErrorsMarked(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = Open(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=5", Options{})
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrRefused) {
		t.Errorf("Open of a server that is not there: %v, want store.ErrUnavailable", err)
	}

	// A server out of connection slots (here, for the role) refuses a
	// session with too_many_connections: unavailable until others close
	// theirs (found by the chaos tier's connection exhaustion).
	cl := pgtest.NewCluster(t)
	if err := exec(ctx, cl.URL(), "CREATE ROLE no_slots LOGIN CONNECTION LIMIT 0"); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("no_slots")
	_, err = Open(ctx, u.String(), Options{})
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrRefused) {
		t.Errorf("Open with no connection slot left: %v, want store.ErrUnavailable", err)
	}

	s := openStore(t, pgtest.NewDatabase(t), clock.Real)
	if _, err := s.pool.Exec(ctx, `CREATE FUNCTION raise_code(c text) RETURNS text LANGUAGE plpgsql
		AS $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = c; END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `CREATE FUNCTION raise_unique(c text) RETURNS text LANGUAGE plpgsql
		AS $$ BEGIN RAISE EXCEPTION 'duplicate' USING ERRCODE = '23505', CONSTRAINT = c; END $$`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sql  string
		args []any
		want error
	}{
		{"SELECT $1::text", []any{"a\x00b"}, store.ErrRefused},
		{`SELECT '{"a":"\u0000"}'::jsonb::text`, nil, store.ErrRefused},
		{"SELECT 1/0", nil, store.ErrRefused}, // a data exception too (class 22)
		{"SELECT * FROM no_such_table", nil, nil},
		// A conflict the server broke by failing one transaction: sent
		// again, the call may succeed (the chaos tier met a claim that
		// lost a deadlock past its retries).
		{"SELECT raise_code('40P01')", nil, store.ErrContended},
		{"SELECT raise_code('40001')", nil, store.ErrContended},
		// A claim that lost the race for a lock_key past its retries (the
		// chaos tier met one in a remote worker's claim over several
		// queues): another claim took the key; the next may not.
		{"SELECT raise_unique('jobd_jobs_lock')", nil, store.ErrContended},
		{"SELECT raise_unique('jobd_jobs_idempotency')", nil, nil},
	} {
		var out string
		err := classify(s.pool.QueryRow(ctx, c.sql, c.args...).Scan(&out))
		if err == nil {
			t.Fatalf("%s: no error", c.sql)
		}
		for _, sentinel := range []error{store.ErrRefused, store.ErrUnavailable, store.ErrContended} {
			if errors.Is(err, sentinel) != (sentinel == c.want) {
				t.Errorf("%s: %v; errors.Is %v = %v", c.sql, err, sentinel, errors.Is(err, sentinel))
			}
		}
	}
}

// exec runs one statement on a connection of its own.
func exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
