package web_test

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/web"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
)

// benchFill writes n jobs straight into a PostgreSQL table, as a week of
// a busy one: created evenly over the last 7 days (UUIDv7 ids of their
// creation time), four queues, 95 % succeeded and 3 % failed a second
// after their creation, 1 % canceled, 1 % queued (a backlog), one job in
// a thousand running (updated a moment ago); one in ten with an
// idempotency key.
const benchFill = `
INSERT INTO jobd_jobs (id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
	lease_token, lease_owner, lease_expires_at, idempotency_key, progress, result, last_error,
	created_at, started_at, finished_at, updated_at)
SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-8' || substr(r, 4, 3) || '-' || substr(r, 7, 12))::uuid,
	'q' || (g % 4), 'transcode', ('{"source":"s3://clips/' || g || '.mov"}')::jsonb, s.state, 100, c, 1, 5, '60s',
	CASE WHEN s.state = 'running' THEN gen_random_uuid() END,
	CASE WHEN s.state = 'running' THEN 'node-1' END,
	CASE WHEN s.state = 'running' THEN now() + interval '1 minute' END,
	CASE WHEN g % 10 = 0 THEN 'order-' || g END,
	'{"phase":"encoding","done":3,"total":3}',
	CASE WHEN s.state = 'succeeded' THEN '{"frames":1200}'::jsonb END,
	CASE WHEN s.state = 'failed' THEN 'ffmpeg exited 1' END,
	c, CASE WHEN s.state <> 'queued' THEN c END,
	CASE WHEN s.state IN ('succeeded', 'failed', 'canceled') THEN c + interval '1 s' END,
	CASE WHEN s.state IN ('succeeded', 'failed', 'canceled') THEN c + interval '1 s'
	     WHEN s.state = 'running' THEN now() - interval '1 s' ELSE c END
FROM generate_series(1, $1::int) g,
	LATERAL (SELECT now() - interval '7 days' + (g::float8 / $1::int) * interval '7 days' - interval '2 s' AS c) t,
	LATERAL (SELECT lpad(to_hex((extract(epoch FROM c) * 1000)::bigint), 12, '0') AS h, md5(g::text) AS r) ids,
	LATERAL (SELECT CASE WHEN g % 1000 < 950 THEN 'succeeded' WHEN g % 1000 < 980 THEN 'failed'
	                     WHEN g % 1000 < 989 THEN 'canceled' WHEN g % 1000 < 999 THEN 'queued'
	                     ELSE 'running' END AS state) s`

// BenchmarkJobsPage renders pages of the dashboard, over real HTTP, on a
// PostgreSQL table of JOBD_BENCH_JOBS jobs (default 100 000; docs/dashboard.md's
// numbers are of 1 000 000), and times the overview's two store reads:
//
//	JOBD_BENCH_JOBS=1000000 go test ./web -run '^$' -bench JobsPage -benchtime 200x
func BenchmarkJobsPage(b *testing.B) {
	n := 100_000
	if v := os.Getenv("JOBD_BENCH_JOBS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	url := migrated.NewDatabase(b)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{benchFill, "VACUUM ANALYZE jobd_jobs"} {
		var args []any
		if sql == benchFill {
			args = []any{n}
		}
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
	var middle, oldKey string
	if err := conn.QueryRow(ctx, `SELECT id::text FROM jobd_jobs ORDER BY id OFFSET $1 LIMIT 1`, n/2).Scan(&middle); err != nil {
		b.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT idempotency_key FROM jobd_jobs WHERE idempotency_key IS NOT NULL ORDER BY id LIMIT 1`).Scan(&oldKey); err != nil {
		b.Fatal(err)
	}
	st, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	d := newDash(b, st, dashOptions{})
	for _, page := range []struct{ name, path string }{
		{"first", "/ui/jobs"},
		{"middle", "/ui/jobs?after=" + middle},
		{"queue", "/ui/jobs?queue=q2"},
		{"state=running", "/ui/jobs?state=running"},
		{"state=failed", "/ui/jobs?state=failed"},
		{"idempotency_key", "/ui/jobs?q=" + oldKey},
		{"no match", "/ui/jobs?kind=none"},
		{"overview", "/ui/"},
		{"summary", "/ui/summary"},
	} {
		b.Run(page.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				resp, err := http.Get(d.URL + page.path)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d", page.path, resp.StatusCode)
				}
			}
		})
	}
	// The overview's two reads. jobd serve's overview reads the node's
	// queue health snapshot instead of the first.
	b.Run("QueueHealth", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.QueueHealth(ctx, store.HealthParams{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("QueueThroughput", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.QueueThroughput(ctx, time.Now().Add(-web.DefaultThroughputWindow)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
