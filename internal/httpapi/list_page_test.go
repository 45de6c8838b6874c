package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// wholePage is GET /api/v1/jobs's answer as it was made before pages were
// read in parts: one store read of limit+1 jobs, encoded whole, for a
// caller limited to queues (nil: every queue).
func wholePage(t *testing.T, st store.Store, query string, queues job.QueuePatterns) (body []byte, total string) {
	t.Helper()
	r := httptest.NewRequest("GET", "/api/v1/jobs?"+query, nil)
	q, err := parseQuery(r, "queue", "kind", "state", "lock_key", "partition_key", "updated_since", "cursor", "limit")
	if err != nil {
		t.Fatal(err)
	}
	params, err := listParams(q)
	if err != nil {
		t.Fatal(err)
	}
	params.QueuesIn = queues
	limit := params.Limit
	if limit > 0 {
		params.Limit = limit + 1
	}
	res, err := st.JobList(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	feed := params.UpdatedSince != nil
	out := api.JobList{Jobs: make([]api.Job, 0, min(len(res.Jobs), limit)), Total: res.Total}
	for i, j := range res.Jobs {
		if i == limit {
			out.NextCursor = encodeCursor(feed, cursorOf(res.Jobs[i-1]))
			break
		}
		out.Jobs = append(out.Jobs, toAPIJob(j))
	}
	if feed {
		switch {
		case len(out.Jobs) > 0:
			out.ResumeCursor = encodeCursor(feed, cursorOf(res.Jobs[len(out.Jobs)-1]))
		case params.After != nil:
			out.ResumeCursor = q.Get("cursor")
		}
	}
	b, err := marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b, strconv.FormatInt(res.Total, 10)
}

// TestListInParts: a page read in parts and encoded a job at a time is,
// byte for byte, the page read and encoded whole, in both orders, with
// and without filters and cursors, for a key limited to a queue or not,
// whether it is sent at once or as it is encoded.
func TestListInParts(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		for i := range 40 {
			// Args of 200 to 2 200 bytes: parts of different sizes.
			args := fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("p", 200+(i%5)*500))
			queue := []string{"a", "b"}[i%2]
			if _, err := st.JobInsertMany(ctx, []job.InsertParams{{Queue: queue, Kind: "k", Args: json.RawMessage(args)}}); err != nil {
				t.Fatal(err)
			}
		}
		since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		limited := job.QueuePatterns{"b"}
		for _, sizes := range []struct{ part, buffer int }{{listPartBytes, listBuffer}, {4 << 10, 1 << 10}, {1, 1}} {
			s, err := newServer(Config{Store: st})
			if err != nil {
				t.Fatal(err)
			}
			s.listPartBytes, s.listBuffer = sizes.part, sizes.buffer
			for _, base := range []string{"", "queue=a", "state=queued", "updated_since=" + since, "updated_since=" + since + "&queue=b", "queue=none"} {
				for _, limit := range []string{"", "limit=0", "limit=1", "limit=7", "limit=9", "limit=25", "limit=200"} {
					// Every other page for a key limited to queue b.
					var queues job.QueuePatterns
					if len(limit)%2 == 1 {
						queues = limited
					}
					query := strings.Trim(base+"&"+limit, "&")
					// This page, then the next one through its cursor.
					for range 2 {
						want, total := wholePage(t, st, query, queues)
						rec := httptest.NewRecorder()
						req := withPrincipal(httptest.NewRequest("GET", "/api/v1/jobs?"+query, nil), Principal{Queues: queues})
						if err := s.list(rec, req); err != nil {
							t.Fatalf("%+v ?%s: %v", sizes, query, err)
						}
						if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) || rec.Header().Get("X-Total-Count") != total ||
							rec.Header().Get("Content-Type") != "application/json" {
							t.Fatalf("%+v ?%s (queues %v): %d (X-Total-Count %s)\n%.300s\nwant (X-Total-Count %s)\n%.300s",
								sizes, query, queues, rec.Code, rec.Header().Get("X-Total-Count"), rec.Body.Bytes(), total, want)
						}
						var page api.JobList
						if err := json.Unmarshal(want, &page); err != nil {
							t.Fatal(err)
						}
						if page.NextCursor == "" {
							break
						}
						query = strings.Trim(base+"&"+limit, "&") + "&cursor=" + page.NextCursor
					}
				}
			}
		}
	})
}

// TestStillHolds: a stream's recheck of its key says no once the key is
// revoked, and, for a worker's key, once its worker is disabled or gone.
func TestStillHolds(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		a := newAuthenticator(st, "admin-secret-for-the-test")
		newRec := func(scopes ...string) (*store.APIKey, Principal) {
			_, prefix, err := newKey()
			if err != nil {
				t.Fatal(err)
			}
			rec := &store.APIKey{ID: "key-" + prefix, Name: "k", Prefix: prefix, Hash: []byte("h"), Scopes: scopes}
			return rec, principalOf(rec)
		}
		holds := func(what string, p Principal, want bool) {
			t.Helper()
			got, err := a.stillHolds(ctx, p, scopeRead)
			if err != nil || got != want {
				t.Fatalf("%s: stillHolds %v, %v; want %v", what, got, err, want)
			}
		}

		rec, p := newRec(api.ScopeRead)
		if err := st.KeyCreate(ctx, *rec); err != nil {
			t.Fatal(err)
		}
		holds("a read key", p, true)
		if err := st.KeyRevoke(ctx, rec.ID); err != nil {
			t.Fatal(err)
		}
		holds("a revoked key", p, false)

		rec, p = newRec(api.ScopeWorker, api.ScopeRead)
		w := store.Worker{ID: "worker-" + rec.Prefix, Name: "w", Metadata: json.RawMessage(`{}`)}
		rec.WorkerID = w.ID
		p.WorkerID = w.ID
		if err := st.WorkerCreate(ctx, w, *rec); err != nil {
			t.Fatal(err)
		}
		holds("an enabled worker's key", p, true)
		if _, err := st.WorkerSetDisabled(ctx, w.ID, true); err != nil {
			t.Fatal(err)
		}
		holds("a disabled worker's key", p, false)
		if _, err := st.WorkerSetDisabled(ctx, w.ID, false); err != nil {
			t.Fatal(err)
		}
		holds("a worker's key enabled again", p, true)
		if err := st.WorkerDelete(ctx, w.ID); err != nil {
			t.Fatal(err)
		}
		holds("a deleted worker's key", p, false)
	})
}
