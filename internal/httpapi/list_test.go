package httpapi_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestList(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		var ids []uuid.UUID
		for i := range 7 {
			queue := "q1"
			if i%2 == 1 {
				queue = "q2"
			}
			j := s.submit(t, fmt.Sprintf(`{"kind":"k%d","queue":%q,"lock_key":"L%d","partition_key":"P%d","args":{"i":%d}}`, i%3, queue, i, i%2, i), 201)
			ids = append(ids, j.ID)
		}
		finish(t, st, claim(t, st, "q1"), store.OutcomeSucceeded, "", "")

		count := func(query string) (int, string) {
			var page api.JobList
			r := s.do("GET", "/api/v1/jobs?"+query, "").must(t, 200, &page)
			return len(page.Jobs), r.header.Get("X-Total-Count")
		}
		for query, want := range map[string]string{
			"":                          "7",
			"queue=q1":                  "4",
			"kind=k1":                   "2",
			"state=queued":              "6",
			"state=succeeded":           "1",
			"state=queued&state=failed": "6",
			"state=succeeded,queued":    "7",
			"lock_key=L3":               "1",
			"partition_key=P1":          "3",
			"queue=q2&kind=k0":          "1",
			"queue=nope":                "0",
		} {
			if _, got := count(query); got != want {
				t.Errorf("?%s: X-Total-Count %s, want %s", query, got, want)
			}
		}

		// limit=0: no rows, only the count (the back-pressure check).
		var page api.JobList
		r := s.do("GET", "/api/v1/jobs?state=queued&limit=0", "").must(t, 200, &page)
		if len(page.Jobs) != 0 || page.NextCursor != "" || r.header.Get("X-Total-Count") != "6" || page.Total != 6 {
			t.Errorf("limit=0: %d jobs, cursor %q, X-Total-Count %q", len(page.Jobs), page.NextCursor, r.header.Get("X-Total-Count"))
		}

		// Paging newest first visits every job once, in id order descending.
		var seen []uuid.UUID
		cursor := ""
		for range 10 {
			q := "limit=3"
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			var page api.JobList
			r := s.do("GET", "/api/v1/jobs?"+q, "").must(t, 200, &page)
			if r.header.Get("X-Total-Count") != "7" {
				t.Errorf("X-Total-Count %q on a page", r.header.Get("X-Total-Count"))
			}
			for _, j := range page.Jobs {
				seen = append(seen, j.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(seen) != len(ids) {
			t.Fatalf("paging saw %d jobs, want %d", len(seen), len(ids))
		}
		for i := range seen {
			if seen[i] != ids[len(ids)-1-i] {
				t.Fatalf("paging order %v, want newest first of %v", seen, ids)
			}
		}

		// A limit out of range is refused naming it, never capped.
		for _, q := range []string{"limit=201", "limit=1000", "limit=-1"} {
			s.do("GET", "/api/v1/jobs?"+q, "").problem(t, 422, "limit")
		}
		if n, _ := count("limit=200"); n != 7 {
			t.Errorf("limit=200 gave %d jobs", n)
		}
	})
}

func TestListBadQuery(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		s.submit(t, `{"kind":"k"}`, 201)
		var feed, newest api.JobList
		s.do("GET", "/api/v1/jobs?limit=1&updated_since=2000-01-01T00:00:00Z", "").must(t, 200, &feed)
		s.submit(t, `{"kind":"k2"}`, 201)
		s.do("GET", "/api/v1/jobs?limit=1", "").must(t, 200, &newest)
		for query, field := range map[string]string{
			"state=pending":              "state",
			"state=queued&state=PENDING": "state",
			"status=queued":              "status",
			"limit=ten":                  "limit",
			"limit=1&limit=2":            "limit",
			"cursor=%%%":                 "",
			"cursor=bm90LWEtY3Vyc29y":    "cursor",
			"cursor=" + newest.NextCursor + "&updated_since=2000-01-01T00:00:00Z": "cursor",
			"cursor=" + feed.ResumeCursor:                                         "cursor",
			"updated_since=yesterday":                                             "updated_since",
			"updated_since=2025-01-01":                                            "updated_since",
		} {
			r := s.do("GET", "/api/v1/jobs?"+query, "")
			if r.status != 400 {
				t.Errorf("?%s: status %d, want 400", query, r.status)
				continue
			}
			r.problem(t, 400, field)
		}
	})
}

// TestFeedExactlyOnce pages the updated_since feed while jobs change
// between pages: every change is seen exactly once (no (id, updated_at)
// twice), and at the end every job has been seen in its latest version.
func TestFeedExactlyOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		since := "2000-01-01T00:00:00Z"
		const n = 12
		for i := range n {
			s.submit(t, fmt.Sprintf(`{"kind":"k","args":{"i":%d}}`, i), 201)
		}

		type version struct {
			id uuid.UUID
			at time.Time
		}
		seen := map[version]bool{}
		latest := map[uuid.UUID]time.Time{}
		cursor := ""
		page := func() int {
			q := "limit=4&updated_since=" + since
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			var p api.JobList
			s.do("GET", "/api/v1/jobs?"+q, "").must(t, 200, &p)
			var prev *api.Job
			for i, j := range p.Jobs {
				v := version{j.ID, j.UpdatedAt}
				if seen[v] {
					t.Errorf("job %s at %s seen twice", j.ID, j.UpdatedAt)
				}
				seen[v] = true
				latest[j.ID] = j.UpdatedAt
				if prev != nil && (j.UpdatedAt.Before(prev.UpdatedAt) || j.UpdatedAt.Equal(prev.UpdatedAt) && j.ID.String() < prev.ID.String()) {
					t.Errorf("feed not ascending by (updated_at, id) at %d", i)
				}
				prev = &p.Jobs[i]
			}
			if p.NextCursor != "" && p.NextCursor != p.ResumeCursor {
				t.Errorf("next_cursor %q differs from resume_cursor %q", p.NextCursor, p.ResumeCursor)
			}
			if p.ResumeCursor != "" {
				cursor = p.ResumeCursor
			}
			return len(p.Jobs)
		}

		// Between pages, change jobs already seen and jobs not yet seen:
		// claim (state), progress, cancel.
		page()
		running := claim(t, st, "default")
		page()
		setProgress(t, st, running, job.Progress{Phase: "p", Done: 1, Total: 2})
		all, err := st.JobList(t.Context(), store.ListParams{States: []job.State{job.StateQueued}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.JobCancel(t.Context(), all.Jobs[0].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := st.JobCancel(t.Context(), all.Jobs[len(all.Jobs)-1].ID); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if page() == 0 {
				break
			}
		}
		// Come back later with the last cursor: only the new change.
		finish(t, st, running, store.OutcomeSucceeded, "", "")
		before := len(seen)
		for range 5 {
			if page() == 0 {
				break
			}
		}
		if len(seen) != before+1 {
			t.Errorf("after one more change the feed gave %d new versions, want 1", len(seen)-before)
		}

		res, err := st.JobList(t.Context(), store.ListParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != n {
			t.Fatalf("%d jobs", len(res.Jobs))
		}
		for _, j := range res.Jobs {
			if at, ok := latest[j.ID]; !ok || !at.Equal(j.UpdatedAt) {
				t.Errorf("job %s: latest version seen %v, current %v", j.ID, at, j.UpdatedAt)
			}
		}
	})
}
