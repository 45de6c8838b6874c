package httpapi_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/store/postgres"
)

// TestDatabaseDownIs503: while the PostgreSQL server restarts (stopped
// as by a crash, then started again), the API answers 503 unavailable
// with Retry-After, never 500, whatever the route and credential; once it
// is back, calls succeed, and a client call made during the outage
// succeeds after the restart, the client having retried it (issue 10,
// defect 8).
func TestDatabaseDownIs503(t *testing.T) {
	t.Parallel()
	cl := pgtest.NewCluster(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, cl.URL(), postgres.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
	before := s.submit(t, `{"kind":"k","queue":"q"}`, 201)
	w := s.registerWorker(t, "w")
	var key api.Key
	s.do("POST", "/api/v1/keys", `{"name":"reader","scopes":["read","submit"]}`).must(t, 201, &key)

	cl.Stop(t)
	for _, c := range []struct {
		method, path, body, auth string
	}{
		{"GET", "/api/v1/jobs/" + before.ID.String(), "", adminSecret},
		{"GET", "/api/v1/jobs?limit=10", "", adminSecret},
		{"POST", "/api/v1/jobs", `{"kind":"k"}`, adminSecret},
		{"POST", "/api/v1/jobs/" + before.ID.String() + "/cancel", "", adminSecret},
		{"GET", "/api/v1/queues", "", adminSecret},
		{"GET", "/api/v1/jobs/" + before.ID.String(), "", key.Key},       // the key's lookup fails
		{"POST", "/api/v1/worker/claim", `{"queues":["q"]}`, w.key},      // the worker's too
		{"POST", "/api/v1/worker/heartbeat", `{"status":"idle"}`, w.key}, // and again
	} {
		r := s.do(c.method, c.path, c.body, "Authorization: Bearer "+c.auth)
		p := r.problem(t, 503, "")
		if p.Type != api.ProblemUnavailable {
			t.Fatalf("%s %s during the outage: problem %s, want %s", c.method, c.path, p.Type, api.ProblemUnavailable)
		}
		if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs <= 0 {
			t.Fatalf("%s %s during the outage: Retry-After %q, want seconds", c.method, c.path, r.header.Get("Retry-After"))
		}
	}

	// A client call made during the outage waits for the database.
	c, err := client.New(s.URL, adminSecret)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		job *api.Job
		err error
	}
	done := make(chan result, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		j, _, err := c.Submit(cctx, api.SubmitRequest{Kind: "k", Queue: "q", IdempotencyKey: "during-the-outage"})
		done <- result{j, err}
	}()
	// The client's first try, at least, meets the outage.
	if r := s.do("GET", "/api/v1/queues", ""); r.status != 503 {
		t.Fatalf("still down: %d %s", r.status, r.body)
	}

	cl.Start(t)
	got := <-done
	if got.err != nil {
		t.Fatalf("the client's submit made during the outage: %v", got.err)
	}
	var j api.Job
	s.do("GET", "/api/v1/jobs/"+got.job.ID.String(), "").must(t, 200, &j)
	if j.IdempotencyKey != "during-the-outage" {
		t.Fatalf("the job submitted during the outage: %+v", j)
	}
	s.do("GET", "/api/v1/jobs/"+before.ID.String(), "", "Authorization: Bearer "+key.Key).must(t, 200, nil)
	var claimed api.ClaimResponse
	w.do("POST", "/api/v1/worker/claim", `{"queues":["q"],"max":2}`).must(t, 200, &claimed)
	if len(claimed.Jobs) != 2 {
		t.Fatalf("claim after the restart: %d jobs, want 2", len(claimed.Jobs))
	}
}
