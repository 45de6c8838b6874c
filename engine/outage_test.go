package engine_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/job"
)

// TestDatabaseOutage: PostgreSQL refuses the engine's connections for a
// while; the engine logs the failure once, backs off, and recovers by
// itself, running the jobs inserted once the database is back.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	dsn := migrated.NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	s := openAt(t, "postgres", dsn, true)
	l := newLogs(t)
	e := newEngine(t, s, l, engine.Config{Queues: queue(2)})
	health := engine.HealthSignal(e)
	health.Init()
	start(t, e)
	before := insert(t, s, job.InsertParams{Kind: "noop"})
	waitState(t, s, before.ID, job.StateSucceeded)

	admin := func(sql string) {
		t.Helper()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pgtest.Server(t))
		if err != nil {
			t.Fatalf("admin connect: %v", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Down: no new connections, and the open ones killed.
	admin(`ALTER DATABASE ` + dbName + ` ALLOW_CONNECTIONS false`)
	admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + dbName + `'`)
	health.WaitFor(t, "the engine to notice the outage", func(h engine.HealthChange) bool { return h.What == "claim" && h.Failing })

	if _, err := s.JobInsertMany(context.Background(), []job.InsertParams{{Kind: "noop"}}); err == nil {
		t.Fatal("an insert succeeded during the outage")
	}

	// Back.
	admin(`ALTER DATABASE ` + dbName + ` ALLOW_CONNECTIONS true`)
	// The test's own pool may still hold killed connections: its first
	// tries can fail, each one dropping a dead connection from the pool.
	var after *job.Job
	for try := 1; after == nil; try++ {
		res, err := s.JobInsertMany(context.Background(), []job.InsertParams{{Kind: "noop"}})
		switch {
		case err == nil:
			after = res[0].Job
		case try == 50:
			t.Fatalf("inserts still fail once the database is back: %v", err)
		}
	}
	waitState(t, s, after.ID, job.StateSucceeded)
	health.WaitFor(t, "the engine to recover", func(h engine.HealthChange) bool { return h.What == "claim" && !h.Failing })
	if n := l.count("claim failing"); n != 1 {
		t.Errorf("the claim failure was logged %d times, want once", n)
	}
}
