package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The database's own record of the jobs' transitions. The journal's
// times cannot order two transactions: an event's time is its
// transaction's start (now()), and a claim may start well before the
// holder of its lock_key ends and still take the key after it, having
// waited for it on the lock index (or run a first queue's claim before
// the second's, in a claim over several queues). So the harness adds a
// trigger of its own to jobd's table that records every change of a
// job's state in the same transaction, and the checks time each one by
// its transaction's commit (track_commit_timestamp): the moment the
// change became true for everyone.
const transitionsSQL = `
CREATE TABLE chaos_transitions (
    seq bigserial PRIMARY KEY,
    job uuid NOT NULL,
    from_state text NOT NULL,
    to_state text NOT NULL,
    attempt integer NOT NULL,
    owner text NOT NULL,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE FUNCTION chaos_transition() RETURNS trigger SECURITY DEFINER LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IS DISTINCT FROM OLD.state THEN
        INSERT INTO chaos_transitions (job, from_state, to_state, attempt, owner)
        VALUES (NEW.id, OLD.state, NEW.state, NEW.attempt, coalesce(NEW.lease_owner, OLD.lease_owner, ''));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER chaos_transition AFTER UPDATE OF state ON jobd_jobs
    FOR EACH ROW EXECUTE FUNCTION chaos_transition();
`

// recordTransitions adds the trigger, as the superuser, once the first
// node made the schema.
func (h *harness) recordTransitions() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, h.db.jobdURL)
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, transitionsSQL); err != nil {
		h.t.Fatalf("the transitions trigger: %v", err)
	}
}

// transition is one change of a job's state, timed by its commit; xid
// names its transaction.
type transition struct {
	from, to  string
	attempt   int
	owner     string
	committed time.Time
	xid       string
}

// transitions reads every job's transitions, in order.
func (h *harness) transitions(ctx context.Context) (map[uuid.UUID][]transition, error) {
	conn, err := pgx.Connect(ctx, h.db.jobdURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	// xid8 to xid: its low 32 bits.
	rows, err := conn.Query(ctx, `
		SELECT job, from_state, to_state, attempt, owner,
		       pg_xact_commit_timestamp(((xid::text::numeric % 4294967296)::text)::xid), xid::text
		FROM chaos_transitions ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[uuid.UUID][]transition)
	for rows.Next() {
		var (
			id        uuid.UUID
			tr        transition
			committed *time.Time
		)
		if err := rows.Scan(&id, &tr.from, &tr.to, &tr.attempt, &tr.owner, &committed, &tr.xid); err != nil {
			return nil, err
		}
		if committed == nil {
			return nil, fmt.Errorf("job %s: the %s→%s transition has no commit timestamp", id, tr.from, tr.to)
		}
		tr.committed = *committed
		out[id] = append(out[id], tr)
	}
	return out, rows.Err()
}

// hold is one claim of a job as the database lived it: from the commit
// of its claim to the commit of the transition that ended it.
type hold struct {
	attempt  int
	owner    string
	from, to time.Time
	end      string // the state it ended in; "" while held
}

// holds reads a job's claims from its transitions; transitions that do
// not alternate between claims and their ends are an error.
func holds(trs []transition) ([]hold, error) {
	var out []hold
	var open *hold
	for _, tr := range trs {
		switch {
		case tr.to == "running":
			if open != nil || tr.from != "queued" {
				return nil, fmt.Errorf("a claim from %s while attempt %v is held", tr.from, open)
			}
			open = &hold{attempt: tr.attempt, owner: tr.owner, from: tr.committed}
		case tr.from == "running":
			if open == nil {
				return nil, fmt.Errorf("running → %s without a claim", tr.to)
			}
			open.to, open.end = tr.committed, tr.to
			out = append(out, *open)
			open = nil
		}
	}
	if open != nil {
		out = append(out, *open)
	}
	return out, nil
}
