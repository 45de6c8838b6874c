package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
)

// TestPlansAreStable checks, with EXPLAIN, that the hot statements keep
// their index plans whatever the table's statistics: on an empty table
// that was never analysed, on a big analysed one, and on a big one that
// VACUUM left with reltuples = 0 (it was emptied, vacuumed, then filled
// again before autovacuum analysed it: the planner then believes it
// empty, and once planned a row lookup by id as a walk of a whole
// secondary index per job, which cut throughput ninefold). pgx prepares
// each statement once per connection, and after five runs PostgreSQL may
// keep a generic plan for good, so the generic plan must be right at
// every size; custom plans are checked too. The claim must walk the
// partial claim index in order (no bitmap scan and sort, no sequential
// scan; a limited queue's claim counts what runs by the lease index), the
// reaper must find expired leases by the lease index, and the
// statements that find rows by id (batched finishes and heartbeats, the
// locks a decision reads under, the writes that apply it) must probe the
// primary key and nothing else.
func TestPlansAreStable(t *testing.T) {
	if testing.Short() {
		t.Skip("200 000 rows of plans run without -short")
	}
	t.Parallel()
	url := migratedDatabase(t)
	openStore(t, url, clock.Real) // migrates
	// A connection set up as the store's are.
	cfg, err := poolConfig(url, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(t.Context(), cfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Statistics change only when this test says so.
	exec("ALTER TABLE jobd_jobs SET (autovacuum_enabled = false)")

	checkPlans(t, conn, "empty, never analysed table", false)

	// 200 000 jobs over four queues: most queued, a tenth running (half of
	// those with lock keys), a tenth finished.
	const fill = `
		INSERT INTO jobd_jobs (id, queue, kind, args, state, priority, run_at, max_attempts,
			lease_ttl, lock_key, lease_token, lease_expires_at, created_at, updated_at, finished_at)
		SELECT gen_random_uuid(), 'q' || (g % 4), 'k', '{}', s.state, g % 3,
			now() - interval '1 hour' + g * interval '1 ms', 5, '60s',
			CASE WHEN g % 20 = 1 OR g % 7 = 0 THEN 'L' || g END,
			CASE WHEN s.state = 'running' THEN gen_random_uuid() END,
			CASE WHEN s.state = 'running' THEN now() + g * interval '1 ms' END,
			now(), now(),
			CASE WHEN s.state = 'succeeded' THEN now() END
		FROM generate_series(1, 200000) g,
			LATERAL (SELECT CASE WHEN g % 10 = 0 THEN 'succeeded'
			                     WHEN g % 10 = 1 THEN 'running' ELSE 'queued' END AS state) s`
	exec(fill)
	exec("ANALYZE jobd_jobs")
	checkPlans(t, conn, "200k jobs, analysed", true)

	// Emptied and vacuumed (reltuples 0, the pages kept: vacuum never
	// truncates this table), then filled again, unanalysed.
	exec("DELETE FROM jobd_jobs")
	exec("VACUUM jobd_jobs")
	exec(fill)
	var reltuples float64
	var rows int64
	err = conn.QueryRow(t.Context(), `SELECT reltuples, (SELECT count(*) FROM jobd_jobs)
		FROM pg_class WHERE oid = 'jobd_jobs'::regclass`).Scan(&reltuples, &rows)
	if err != nil {
		t.Fatal(err)
	}
	if reltuples != 0 || rows != 200000 {
		t.Fatalf("after the vacuum and the refill: reltuples %v with %d rows, want 0 with 200000", reltuples, rows)
	}
	checkPlans(t, conn, "200k jobs, reltuples 0 after a vacuum", true)
}

// A statement's plan as the test sees it.
const (
	// scansOf: at least one scan of jobd_jobs is of the statement's
	// index, and all of them are index scans (no sequential scan, no
	// bitmap scan and sort).
	scansOf = iota
	// lookupBy: every scan of jobd_jobs is of the statement's index, and
	// an index scan. A lookup of rows by id must probe the primary key,
	// never walk another index whole.
	lookupBy
	// countedBy: every read of jobd_jobs goes through the statement's
	// index (an index, index-only or bitmap heap scan of it), so a count
	// costs the rows that index holds, never the table.
	countedBy
)

func checkPlans(t *testing.T, conn *pgx.Conn, table string, holdsRows bool) {
	t.Helper()
	const batch = 1000
	ids, tokens, nulls, entries := make([]string, batch), make([]string, batch), make([]string, batch), make([]string, batch)
	states, zeros, owners := make([]string, batch), make([]string, batch), make([]string, batch)
	waiting, falses := make([]string, batch), make([]string, batch)
	for i := range ids {
		ids[i], tokens[i], nulls[i], owners[i] = uuid.NewString(), uuid.NewString(), "NULL", `""`
		entries[i] = `"[{\"kind\":\"failed\",\"at\":1,\"attempt\":1}]"`
		states[i], zeros[i], waiting[i], falses[i] = "failed", "0", "waiting", "false"
	}
	arr := func(elems []string) string { return "'{" + strings.Join(elems, ",") + "}'" }
	id := "'" + uuid.NewString() + "'"
	statements := []struct {
		name      string
		sql       string
		args      []string // SQL literals
		wantIndex string
		check     int // scansOf or lookupBy
		// ordered: the statement runs with planner_ordered.sql's settings
		// (the claim, see JobClaim; the reaper, see rescue; the lookups
		// by id, see pinnedRound).
		ordered bool
	}{
		{"claim", claimSQL, []string{"NULL", "'q1'", fmt.Sprint(batch), "'me'", "'{}'", "NULL", "'0s'", "NULL"},
			"jobd_jobs_claim", scansOf, true},
		{"claim_after", claimAfterSQL, []string{"NULL", "'q1'", fmt.Sprint(batch), "'me'", "'{}'", "NULL", "'0s'", "NULL",
			"100", "now()", "'00000000-0000-0000-0000-000000000000'"}, "jobd_jobs_claim", scansOf, true},
		{"claim_limited", claimLimitedSQL, []string{"NULL", "'q1'", fmt.Sprint(batch), "'me'", "'{}'", "NULL", "'0s'", "NULL"},
			"jobd_jobs_claim", scansOf, true},
		{"claim_limited_after", claimLimitedAfterSQL, []string{"NULL", "'q1'", fmt.Sprint(batch), "'me'", "'{}'", "NULL", "'0s'", "NULL",
			"100", "now()", "'00000000-0000-0000-0000-000000000000'"}, "jobd_jobs_claim", scansOf, true},
		{"flow_throttle", flowThrottleSQL, []string{"NULL", arr(ids), arr(nulls)}, "jobd_jobs_pkey", lookupBy, true},
		{"finish_succeeded", finishSucceededSQL, []string{"NULL", arr(ids), arr(tokens), arr(nulls), "'succeeded'", arr(owners), "'{q1}'"},
			"jobd_jobs_pkey", lookupBy, true},
		{"lock_held", lockHeldSQL, []string{"NULL", arr(ids), arr(tokens)}, "jobd_jobs_pkey", lookupBy, true},
		{"set_state_if_running", setStateIfRunningSQL, []string{"NULL", arr(ids), arr(tokens), arr(states), arr(nulls),
			arr(zeros), arr(nulls), arr(nulls), arr(nulls), arr(entries), arr(nulls), arr(nulls), "'{q1}'", arr(nulls)}, "jobd_jobs_pkey", lookupBy, true},
		{"outcome_accepted", outcomeAcceptedSQL, []string{arr(ids), arr(tokens)}, "jobd_jobs_pkey", lookupBy, true},
		{"lock_expired", lockExpiredSQL, []string{"NULL", fmt.Sprint(batch)}, "jobd_jobs_lease", lookupBy, true},
		{"lock_timed_out", lockTimedOutSQL, []string{"NULL", fmt.Sprint(batch)}, "jobd_jobs_lease", lookupBy, true},
		{"job_lock", jobLockSQL, []string{"NULL", id}, "jobd_jobs_pkey", lookupBy, false},
		{"job_set_state", jobSetStateSQL, []string{"NULL", id, "'queued'", "NULL", "'canceled'", "NULL", "0", "false",
			"now()", `'[{"kind":"canceled","at":1,"attempt":0}]'`, "NULL", "false", "NULL", "''", "NULL", "''"},
			"jobd_jobs_pkey", lookupBy, false},
		{"job_events", jobEventsSQL, []string{id}, "jobd_jobs_pkey", lookupBy, false},
		{"queue_depth", queueDepthSQL, []string{"NULL", "'q1'"}, "jobd_jobs_claim", countedBy, false},
		{"heartbeat", heartbeatSQL, []string{"NULL", arr(ids), arr(tokens), arr(owners)}, "jobd_jobs_pkey", lookupBy, true},
		// The workflow step and a workflow's reads and writes: tasks by id,
		// or by their workflow.
		{"workflow_reach_lock", workflowReachLockSQL, []string{arr(ids), arr(falses)}, "jobd_jobs_pkey", lookupBy, true},
		{"task_set_state", taskSetStateSQL, []string{"NULL", arr(ids), arr(waiting), arr(states), arr(nulls), arr(zeros),
			arr(falses), arr(nulls), arr(nulls), arr(nulls), arr(entries), arr(nulls), arr(zeros), arr(nulls), arr(falses)},
			"jobd_jobs_pkey", lookupBy, true},
		{"tasks_lock", tasksLockSQL, []string{arr(ids)}, "jobd_jobs_pkey", lookupBy, true},
		{"workflow_tasks_lock_active", workflowTasksLockActiveSQL, []string{id}, "jobd_jobs_workflow", lookupBy, true},
		{"workflow_plan", workflowPlanSQL, []string{id}, "jobd_jobs_workflow", lookupBy, true},
		{"workflow_tasks", workflowTasksSQL, []string{id}, "jobd_jobs_workflow", lookupBy, true},
		{"workflow_edges", workflowEdgesSQL, []string{id}, "jobd_jobs_workflow", lookupBy, true},
		{"workflow_prune", workflowPruneSQL, []string{"now()", "100"}, "jobd_jobs_workflow", lookupBy, true},
		// Durable execution: a step's fence, a wait, a parent's children
		// (by the children index), the parents a child's end locks.
		{"step_lease", stepLeaseSQL, []string{"NULL", id, id, "''"}, "jobd_jobs_pkey", lookupBy, false},
		{"job_wait", jobWaitSQL, []string{"NULL", id, id, "'waiting'", "NULL", "0", "NULL", "NULL", "'children'", "1", "NULL", "NULL"},
			"jobd_jobs_pkey", lookupBy, false},
		{"children_pending", childrenPendingSQL, []string{id}, "jobd_jobs_children", lookupBy, false},
		{"children_keys", childrenKeysSQL, []string{id}, "jobd_jobs_children", lookupBy, false},
		{"children_lock_active", childrenLockActiveSQL, []string{id}, "jobd_jobs_children", lookupBy, false},
		{"children_count", childrenCountSQL, []string{arr(ids)}, "jobd_jobs_children", lookupBy, true},
		{"parents_lock", parentsLockSQL, []string{arr(ids)}, "jobd_jobs_pkey", lookupBy, true},
		{"signal_wait_of", signalWaitOfSQL, []string{id}, "jobd_jobs_pkey", lookupBy, false},
		{"child_adopt", childAdoptSQL, []string{id, arr(ids), arr(owners), "NULL", arr(owners)}, "jobd_jobs_pkey", lookupBy, false},
	}
	for _, st := range statements {
		if _, err := conn.Exec(t.Context(), "PREPARE "+st.name+" AS "+st.sql); err != nil {
			t.Fatalf("prepare %s: %v", st.name, err)
		}
		for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
			if mode == "force_custom_plan" && !holdsRows && st.check != scansOf {
				continue // a plan made for one run may read an empty table whole
			}
			if _, err := conn.Exec(t.Context(), "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			doc := explainIn(t, conn, st.ordered,
				fmt.Sprintf("EXPLAIN (FORMAT JSON) EXECUTE %s(%s)", st.name, strings.Join(st.args, ", ")))
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal(doc, &plans); err != nil {
				t.Fatal(err)
			}
			var scans []string
			cursorInIndex := false
			claimScans := 0
			plans[0].Plan.walk(func(n *planNode) {
				if n.Relation == "jobd_jobs" && n.Type != "ModifyTable" {
					scans = append(scans, strings.TrimSpace(n.Type+" "+n.indexName()))
				}
				if n.Index == "jobd_jobs_claim" {
					claimScans++
				}
				// The primary key is for finding rows by id: a scan of it
				// without an index condition walks every job.
				if n.Index == "jobd_jobs_pkey" && n.Cond == "" {
					t.Errorf("%s, %s: %s walks jobd_jobs_pkey whole (a %s without an index condition):\n%s", table, mode, st.name, n.Type, doc)
				}
				cursorInIndex = cursorInIndex || (n.Index == "jobd_jobs_claim" && strings.Contains(n.Cond, "ROW(priority, run_at, id) >"))
			})
			// A claim walks the claim index once, for its candidates: the
			// claimed jobs are found by primary key.
			if st.wantIndex == "jobd_jobs_claim" && claimScans != 1 {
				t.Errorf("%s, %s: %s walks the claim index %d times, want once:\n%s", table, mode, st.name, claimScans, doc)
			}
			if strings.HasSuffix(st.name, "_after") && !cursorInIndex {
				t.Errorf("%s, %s: the cursor is not where the claim index scan starts (no ROW(...) > in its Index Cond)", table, mode)
			}
			where := fmt.Sprintf("%s, %s: %s reads jobd_jobs by %q", table, mode, st.name, scans)
			found := false
			for _, s := range scans {
				indexScan := strings.HasPrefix(s, "Index Scan ") || strings.HasPrefix(s, "Index Only Scan ")
				of := strings.HasSuffix(s, " "+st.wantIndex)
				switch {
				case st.check == countedBy:
					if !of {
						t.Errorf("%s: want reads through %s only", where, st.wantIndex)
					}
				case !indexScan:
					t.Errorf("%s: want index scans only", where)
				case st.check == lookupBy && !of:
					t.Errorf("%s: want scans of %s only", where, st.wantIndex)
				}
				found = found || of
			}
			if !found {
				t.Errorf("%s: want a scan of %s", where, st.wantIndex)
			}
		}
		if _, err := conn.Exec(t.Context(), "DEALLOCATE "+st.name); err != nil {
			t.Fatal(err)
		}
	}
}

// explainIn returns the plan explain prints, in a transaction that has
// planner_ordered.sql's settings when ordered.
func explainIn(t *testing.T, conn *pgx.Conn, ordered bool, explain string) []byte {
	t.Helper()
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	if ordered {
		if _, err := tx.Exec(t.Context(), plannerOrderedSQL); err != nil {
			t.Fatal(err)
		}
	}
	var doc []byte
	if err := tx.QueryRow(t.Context(), explain).Scan(&doc); err != nil {
		t.Fatalf("%s: %v", explain, err)
	}
	return doc
}

// planNode is the part of EXPLAIN (FORMAT JSON) that TestPlansAreStable reads.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Cond     string     `json:"Index Cond"`
	Plans    []planNode `json:"Plans"`
}

// indexName is the index a scan reads; for a bitmap heap scan, that of
// the bitmap index scans under it.
func (n *planNode) indexName() string {
	if n.Index != "" || n.Type != "Bitmap Heap Scan" {
		return n.Index
	}
	var names []string
	n.walk(func(c *planNode) {
		if c.Type == "Bitmap Index Scan" {
			names = append(names, c.Index)
		}
	})
	return strings.Join(names, "+")
}

func (n *planNode) walk(fn func(*planNode)) {
	fn(n)
	for i := range n.Plans {
		n.Plans[i].walk(fn)
	}
}
