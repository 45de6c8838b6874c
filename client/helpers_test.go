package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// eachStore runs fn as a parallel subtest per store driver.
func eachStore(t *testing.T, fn func(t *testing.T, st store.Store)) {
	teststore.Each(t, fn)
}

// serve runs the API over st (wrapped by wrap, if not nil) and returns a
// client of it presenting key.
func serve(t *testing.T, st store.Store, cfg httpapi.Config, key string, wrap func(http.Handler) http.Handler) (*client.Client, string) {
	t.Helper()
	cfg.Store = st
	cfg.PollInterval = 5e6 // 5ms
	h, err := httpapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, key)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv.URL
}

func claim(t *testing.T, st store.Store, queue string) *job.Job {
	t.Helper()
	js, err := st.JobClaim(context.Background(), store.ClaimParams{Queue: queue, Max: 1, Owner: "test"})
	if err != nil || len(js) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(js), err)
	}
	return js[0]
}

func finish(t *testing.T, st store.Store, j *job.Job, status store.OutcomeStatus, result string) {
	t.Helper()
	o := store.Outcome{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Outcome: job.Outcome{Status: status, Error: "it broke"}}
	if result != "" {
		o.Result = json.RawMessage(result)
	}
	if res, err := st.JobFinish(context.Background(), []store.Outcome{o}); err != nil || res[0].Lost {
		t.Fatalf("finish: %+v, %v", res, err)
	}
}
