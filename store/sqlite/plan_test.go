package sqlite

import (
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/jobd/jobd/job"
)

// TestQueryPlans checks that the hot queries search their partial index
// rather than scan the table, that the claim needs no sort, and that the
// batched writes (and the read of the facts a decision needs) find each
// job by primary key — on a table never analysed, and on one whose
// statistics (ANALYZE, as an operator's maintenance or PRAGMA optimize
// runs it) were taken while it was empty, as after a queue drained.
func TestQueryPlans(t *testing.T) {
	s := openTemp(t, nil)
	t.Run("never analysed", func(t *testing.T) { checkPlans(t, s) })
	// A queue that held jobs and drained, then analysed: the statistics
	// say the jobs table has no rows (the state a burst then meets).
	ctx := t.Context()
	if _, err := s.JobInsertMany(ctx, []job.InsertParams{{Queue: "q", Kind: "k"}, {Queue: "q", Kind: "k"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.QueuePurge(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if err := s.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	var stat string
	if err := s.r.QueryRowContext(ctx, "SELECT stat FROM sqlite_stat1 WHERE tbl = 'jobd_jobs' AND idx = 'jobd_jobs_claim_idx'").Scan(&stat); err != nil {
		t.Fatalf("statistics of the drained table: %v", err)
	}
	if !strings.HasPrefix(stat, "0 ") {
		t.Fatalf("statistics of the drained table: %q, want 0 rows", stat)
	}
	t.Run("analysed empty", func(t *testing.T) { checkPlans(t, s) })
}

func checkPlans(t *testing.T, s *Store) {
	// On a writer connection, which has the batched writes' temp table.
	conn, err := s.w.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), batchPrepareSQL); err != nil {
		t.Fatal(err)
	}
	args := []any{
		sql.Named("queue", "q"), sql.Named("now", int64(1)), sql.Named("stamp", int64(1)), sql.Named("scan", 10),
		sql.Named("limit", 10), sql.Named("before", int64(1)),
		sql.Named("kind", ""), sql.Named("states", ""), sql.Named("lock_key", ""),
		sql.Named("partition_key", ""), sql.Named("idempotency_key", ""), sql.Named("since", int64(0)),
		sql.Named("after_at", int64(0)), sql.Named("after_id", ""),
		sql.Named("batch", "[]"), sql.Named("owner", ""),
		sql.Named("caps", "[]"), sql.Named("worker", nil), sql.Named("window", int64(0)),
		sql.Named("after", 0), sql.Named("after_priority", nil), sql.Named("after_run_at", nil),
		sql.Named("leases", "[]"), sql.Named("state", "succeeded"), sql.Named("default_timeout_us", nil), sql.Named("low", ""),
		sql.Named("id", ""), sql.Named("token", ""), sql.Named("result", nil), sql.Named("run_at", nil),
		sql.Named("attempt", 1), sql.Named("finished_at", nil), sql.Named("last_error", nil),
		sql.Named("attempted_at", nil), sql.Named("entries", nil), sql.Named("events", "[]"),
		sql.Named("limited", 1), sql.Named("blocked", `["a"]`), sql.Named("throttles", "[]"),
		sql.Named("queues_limited", 0), sql.Named("queue_names", "[]"), sql.Named("queue_prefixes", "[]"),
		sql.Named("ends", `[{"id":"a","failing":1}]`), sql.Named("from", "waiting"), sql.Named("cancel_requested", 0),
		sql.Named("wait_for", nil), sql.Named("pending", 0), sql.Named("canceled_by", nil),
		sql.Named("ids", "[]"), sql.Named("name", ""),
	}
	// The one walk of a whole index a statement makes, by its name: the
	// partial index it walks holds only what it reads.
	scans := map[string]string{
		"running jobs of a limited queue": "SCAN jobd_jobs USING INDEX jobd_jobs_lease_idx",
	}
	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"claim candidates", claimCandidatesSQL, []string{"USING INDEX jobd_jobs_claim_idx", "USING COVERING INDEX jobd_jobs_lock_idx"}},
		{"claim batch", claimJobsSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"finish successes", finishSucceededBatchSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"held leases", lockHeldSQL, []string{"SEARCH j USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"outcomes remembered", outcomeAcceptedSQL, []string{"SEARCH j USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"apply decisions", setStateIfRunningSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"expired leases", lockExpiredSQL, []string{"USING INDEX jobd_jobs_lease_idx"}},
		{"timed-out attempts", lockTimedOutSQL, []string{"USING INDEX jobd_jobs_lease_idx"}},
		{"prune", pruneJobsSQL, []string{"USING INDEX jobd_jobs_finished_idx"}},
		{"record webhook events", webhookEventsRecordSQL, []string{"SEARCH j USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"feed", jobListFeedSQL, []string{"USING INDEX jobd_jobs_updated_idx"}},
		{"newest first", jobListNewestSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id>? AND id<?)"}},
		{"scan bound", jobScanBoundSQL, []string{"SEARCH jobd_jobs USING COVERING INDEX sqlite_autoindex_jobd_jobs_1 (id<?)"}},
		{"running jobs of a limited queue", flowRunningSQL, nil},
		{"throttles of queues", flowThrottleQueuesSQL, []string{"SEARCH j USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"throttles of partitions", flowThrottlePartitionsSQL, []string{"SEARCH j USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		// The workflow step and a workflow's reads and writes: tasks by
		// id, by their workflow, or by the edges into them.
		{"workflow step's read", workflowReachSQL, []string{
			"SEARCH e USING COVERING INDEX jobd_workflow_edges_depends_on_idx (depends_on=?)",
			"SEARCH c USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)",
			"SEARCH j USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"apply a task's transition", taskSetStateSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"inputs of a claimed task", taskInputsSQL, []string{"SEARCH e USING PRIMARY KEY (job_id=?)",
			"SEARCH d USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
		{"tasks of a workflow", workflowTasksSQL, []string{"SEARCH jobd_jobs USING INDEX jobd_jobs_workflow_idx (workflow_id=?)"}},
		{"facts of a workflow's tasks", workflowPlanSQL, []string{"SEARCH j USING INDEX jobd_jobs_workflow_idx (workflow_id=?)"}},
		{"active tasks of a workflow", workflowTasksActiveSQL, []string{"SEARCH j USING INDEX jobd_jobs_workflow_idx (workflow_id=?)"}},
		{"edges of a workflow", workflowEdgesSQL, []string{"USING COVERING INDEX jobd_jobs_workflow_idx (workflow_id=?)",
			"SEARCH e USING PRIMARY KEY (job_id=?)"}},
		{"prune workflows", workflowPruneSQL, []string{"USING INDEX jobd_workflows_finished_idx"}},
		{"delete a workflow's tasks", workflowDeleteTasksSQL, []string{"INDEX jobd_jobs_workflow_idx (workflow_id=?)",
			"SEARCH jobd_signals USING PRIMARY KEY (job_id=?)", "SEARCH jobd_job_steps USING PRIMARY KEY (job_id=?)"}},
		{"delete a workflow's edges", workflowDeleteEdgesSQL, []string{"SEARCH jobd_workflow_edges USING PRIMARY KEY (job_id=?)"}},
		// Durable execution: a parent's children by the children index,
		// steps and signals by their keys.
		{"children not final", childrenPendingSQL, []string{"jobd_jobs_children_idx (parent_id=?)"}},
		{"children of a parent", childrenOfSQL, []string{"jobd_jobs_children_idx (parent_id=?)"}},
		{"children's keys", childrenKeysSQL, []string{"jobd_jobs_children_idx (parent_id=?)"}},
		{"active children", childrenActiveSQL, []string{"jobd_jobs_children_idx (parent_id=?)"}},
		{"steps of jobs", stepsOfSQL, []string{"SEARCH jobd_job_steps USING PRIMARY KEY (job_id=?)"}},
		{"a step", stepGetSQL, []string{"SEARCH jobd_job_steps USING PRIMARY KEY (job_id=? AND name=?)"}},
		{"a signal", signalGetSQL, []string{"SEARCH jobd_signals USING PRIMARY KEY (job_id=? AND name=?)"}},
		{"the signal a job waits for", signalWaitOfSQL, []string{"SEARCH jobd_jobs USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"}},
	} {
		rows, err := conn.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, args...)
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
		if scan := scans[tc.name]; scan != "" {
			if !strings.Contains(text, scan) {
				t.Errorf("%s plan lacks %q:\n%s", tc.name, scan, text)
			}
			text = strings.Replace(text, scan, "", 1)
		}
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

// TestPurgePlanProbesParent: a purge reads its queue's jobs whole (no
// index serves it, see queue_purge_jobs.sql) but finds each candidate's
// parent, whose state decides whether the child stays, by its primary
// key.
func TestPurgePlanProbesParent(t *testing.T) {
	s := openTemp(t, nil)
	rows, err := s.w.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+queuePurgeJobsSQL, sql.Named("queue", "q"), sql.Named("limit", 10))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := "SEARCH p USING INDEX sqlite_autoindex_jobd_jobs_1 (id=?)"; !slices.Contains(plan, want) {
		t.Fatalf("purge plan lacks %q:\n%s", want, strings.Join(plan, "\n"))
	}
}
