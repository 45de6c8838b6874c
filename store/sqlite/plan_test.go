package sqlite

import (
	"database/sql"
	"strings"
	"testing"
)

// TestQueryPlans checks that the hot queries search their partial index
// rather than scan the table, that the claim needs no sort, and that the
// batched writes (and the read of the facts a decision needs) find each
// job by primary key.
func TestQueryPlans(t *testing.T) {
	s := openTemp(t, nil)
	args := []any{
		sql.Named("queue", "q"), sql.Named("now", int64(1)), sql.Named("stamp", int64(1)), sql.Named("scan", 10),
		sql.Named("limit", 10), sql.Named("before", int64(1)),
		sql.Named("kind", ""), sql.Named("states", ""), sql.Named("lock_key", ""),
		sql.Named("partition_key", ""), sql.Named("idempotency_key", ""), sql.Named("since", int64(0)),
		sql.Named("after_at", int64(0)), sql.Named("after_id", ""),
		sql.Named("batch", "[]"), sql.Named("owner", ""),
		sql.Named("caps", "[]"), sql.Named("worker", nil), sql.Named("window", int64(0)),
		sql.Named("after", 0), sql.Named("after_priority", nil), sql.Named("after_run_at", nil),
		sql.Named("leases", "[]"), sql.Named("state", "succeeded"), sql.Named("low", ""),
	}
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"claim", claimCandidatesSQL, []string{"USING INDEX jobd_jobs_claim_idx", "USING COVERING INDEX jobd_jobs_lock_idx"}},
		{"claim batch", claimJobsSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"finish successes", finishSucceededBatchSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"held leases", lockHeldSQL, []string{"SEARCH j USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"apply decisions", setStateIfRunningSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"expired leases", lockExpiredSQL, []string{"USING INDEX jobd_jobs_lease_idx"}},
		{"prune", pruneJobsSQL, []string{"USING INDEX jobd_jobs_finished_idx"}},
		{"feed", jobListFeedSQL, []string{"USING INDEX jobd_jobs_updated_idx"}},
		{"newest first", jobListNewestSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id>? AND id<?)"}},
		{"scan bound", jobScanBoundSQL, []string{"SEARCH jobd_jobs USING COVERING INDEX sqlite_autoindex_jobd_jobs_1 (id<?)"}},
	} {
		rows, err := s.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s plan lacks %q:\n%s", tc.name, w, text)
			}
		}
		for _, bad := range []string{"SCAN jobd_jobs", "SCAN j\n", "TEMP B-TREE"} {
			if strings.Contains(text+"\n", bad) {
				t.Errorf("%s plan has %q:\n%s", tc.name, bad, text)
			}
		}
	}
}
