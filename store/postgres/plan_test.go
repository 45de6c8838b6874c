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
// that was never analysed and on a big analysed one. pgx prepares each
// statement once per connection, and after five runs PostgreSQL may keep a
// generic plan for good, so the generic plan must be right at every size;
// custom plans are checked too. The claim must walk the partial claim
// index in order (no bitmap scan and sort, no sequential scan), and the
// batched writes must probe the primary key for their 1000 rows.
func TestPlansAreStable(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	openStore(t, url, clock.Real) // migrates
	// A connection set up as the store's are.
	cfg, err := poolConfig(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(t.Context(), cfg.ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	checkPlans(t, conn, false)

	// 200 000 jobs over four queues: most queued, a tenth running (half of
	// those with lock keys), a tenth finished.
	_, err = conn.Exec(t.Context(), `
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
			                     WHEN g % 10 = 1 THEN 'running' ELSE 'queued' END AS state) s`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "ANALYZE jobd_jobs"); err != nil {
		t.Fatal(err)
	}
	checkPlans(t, conn, true)
}

func checkPlans(t *testing.T, conn *pgx.Conn, big bool) {
	t.Helper()
	table := "empty, never analysed table"
	if big {
		table = "200k jobs, analysed"
	}
	const batch = 1000
	ids, tokens, nulls, strs := make([]string, batch), make([]string, batch), make([]string, batch), make([]string, batch)
	statuses, falses, zeros := make([]string, batch), make([]string, batch), make([]string, batch)
	for i := range ids {
		ids[i], tokens[i], nulls[i], strs[i] = uuid.NewString(), uuid.NewString(), "NULL", `""`
		statuses[i], falses[i], zeros[i] = "failed", "f", "0"
	}
	arr := func(elems []string) string { return "'{" + strings.Join(elems, ",") + "}'" }
	statements := []struct {
		name      string
		sql       string
		args      []string // SQL literals
		wantIndex string
		// anyPlanWhenEmpty: a custom plan (made for one run, never kept)
		// may read a table that is empty whole.
		anyPlanWhenEmpty bool
	}{
		{"claim", claimSQL, []string{"NULL", "'q1'", fmt.Sprint(batch), "'me'", "'{}'", "NULL", "'0s'"}, "jobd_jobs_claim", false},
		{"claim_after", claimAfterSQL, []string{"NULL", "'q1'", fmt.Sprint(batch), "'me'", "'{}'", "NULL", "'0s'",
			"100", "now()", "'00000000-0000-0000-0000-000000000000'"}, "jobd_jobs_claim", false},
		{"finish_succeeded", finishSucceededSQL, []string{"NULL", arr(ids), arr(tokens), arr(nulls)}, "jobd_jobs_pkey", true},
		{"finish", finishSQL, []string{"NULL", arr(ids), arr(tokens), arr(statuses), arr(nulls), arr(strs), arr(falses), arr(zeros)}, "jobd_jobs_pkey", true},
		{"heartbeat", heartbeatSQL, []string{"NULL", arr(ids), arr(tokens), "'me'"}, "jobd_jobs_pkey", true},
	}
	for _, st := range statements {
		if _, err := conn.Exec(t.Context(), "PREPARE "+st.name+" AS "+st.sql); err != nil {
			t.Fatalf("prepare %s: %v", st.name, err)
		}
		for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
			if mode == "force_custom_plan" && !big && st.anyPlanWhenEmpty {
				continue
			}
			if _, err := conn.Exec(t.Context(), "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			var doc []byte
			explain := fmt.Sprintf("EXPLAIN (FORMAT JSON) EXECUTE %s(%s)", st.name, strings.Join(st.args, ", "))
			if err := conn.QueryRow(t.Context(), explain).Scan(&doc); err != nil {
				t.Fatalf("%s: EXPLAIN %s: %v", table, st.name, err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal(doc, &plans); err != nil {
				t.Fatal(err)
			}
			var scans []string
			cursorInIndex := false
			plans[0].Plan.walk(func(n *planNode) {
				if n.Relation == "jobd_jobs" && n.Type != "ModifyTable" {
					scans = append(scans, strings.TrimSpace(n.Type+" "+n.Index))
				}
				cursorInIndex = cursorInIndex || (n.Index == "jobd_jobs_claim" && strings.Contains(n.Cond, "ROW(priority, run_at, id) >"))
			})
			if st.name == "claim_after" && !cursorInIndex {
				t.Errorf("%s, %s: the cursor is not where the claim index scan starts (no ROW(...) > in its Index Cond)", table, mode)
			}
			where := fmt.Sprintf("%s, %s: %s reads jobd_jobs by %q", table, mode, st.name, scans)
			found := false
			for _, s := range scans {
				if !strings.HasPrefix(s, "Index Scan ") && !strings.HasPrefix(s, "Index Only Scan ") {
					t.Errorf("%s: want index scans only", where)
				}
				found = found || strings.HasSuffix(s, " "+st.wantIndex)
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

// planNode is the part of EXPLAIN (FORMAT JSON) that TestPlansAreStable reads.
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Index    string     `json:"Index Name"`
	Cond     string     `json:"Index Cond"`
	Plans    []planNode `json:"Plans"`
}

func (n *planNode) walk(fn func(*planNode)) {
	fn(n)
	for i := range n.Plans {
		n.Plans[i].walk(fn)
	}
}
