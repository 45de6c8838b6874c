package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Children (store.DurableStore.JobSpawn; store/children.go for the
// rules), in the write transaction, which holds the file's one write
// lock: the counts it reads cannot change before it writes.

// JobSpawn spawns children of the job lease holds, fenced by the lease.
func (s *executor) JobSpawn(ctx context.Context, lease store.Lease, p store.SpawnParams) ([]store.InsertResult, error) {
	if err := job.NormalizeChildren(p.Children, s.maxArgs, p.Limit()); err != nil {
		return nil, err
	}
	var out []store.InsertResult
	err := s.atomically(ctx, func(ex *executor) error {
		tx, err := ex.jobWrite(ctx)
		if err != nil {
			return err
		}
		var (
			attempt, steps int
			cancel         bool
		)
		err = tx.QueryRowContext(ctx, stepLeaseSQL,
			sql.Named("id", lease.ID.String()),
			sql.Named("token", lease.Token.String()),
			sql.Named("owner", lease.Owner),
			sql.Named("now", tx.now),
			sql.Named("stamp", tx.stamp),
		).Scan(&attempt, &cancel, &steps)
		if errors.Is(err, sql.ErrNoRows) {
			return job.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		var workflow, ref string
		if err := tx.QueryRowContext(ctx, parentWorkflowSQL, sql.Named("id", lease.ID.String())).Scan(&workflow, &ref); err != nil {
			return fmt.Errorf("read the parent's workflow: %w", err)
		}
		have, err := childKeys(ctx, tx, lease.ID)
		if err != nil {
			return err
		}
		var fresh []job.InsertParams
		for _, c := range p.Children {
			if _, ok := have[c.Key]; !ok {
				fresh = append(fresh, c.InsertParams)
			}
		}
		if len(have)+len(fresh) > p.Limit() {
			return store.TooManyChildren(len(have), len(fresh), p.Limit())
		}
		var inserted []store.InsertResult
		if len(fresh) > 0 {
			if inserted, err = ex.JobInsertMany(ctx, fresh); err != nil {
				return err
			}
		}
		out = make([]store.InsertResult, len(p.Children))
		for i, c := range p.Children {
			if id, ok := have[c.Key]; ok {
				j, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id))
				if err != nil {
					return fmt.Errorf("child %q: %w", c.Key, err)
				}
				out[i] = store.InsertResult{Job: j}
				continue
			}
			r := inserted[0]
			inserted = inserted[1:]
			var wf any
			if workflow != "" {
				wf = workflow
			}
			res, err := tx.ExecContext(ctx, childAdoptSQL, sql.Named("id", r.Job.ID.String()),
				sql.Named("parent", lease.ID.String()), sql.Named("key", c.Key),
				sql.Named("workflow", wf), sql.Named("ref", store.ChildRef(ref, c.Key)))
			if err != nil {
				return fmt.Errorf("child %q: %w", c.Key, err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("child %q: %d rows adopted (%v)", c.Key, n, err)
			}
			r.Job.ParentID, r.Job.ChildKey = lease.ID, c.Key
			if workflow != "" {
				if r.Job, err = scanJob(tx.QueryRowContext(ctx, jobGetSQL, r.Job.ID.String())); err != nil {
					return fmt.Errorf("child %q: %w", c.Key, err)
				}
			}
			out[i] = r
		}
		if workflow != "" && len(fresh) > 0 {
			if _, err := tx.ExecContext(ctx, workflowGrowSQL, sql.Named("id", workflow), sql.Named("n", len(fresh)),
				sql.Named("now", tx.now)); err != nil {
				return fmt.Errorf("count the children in the workflow: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: spawn children of job %s: %w", lease.ID, err)
	}
	return out, nil
}

// childKeys reads a parent's children's ids, by key.
func childKeys(ctx context.Context, tx *jobWrite, parent uuid.UUID) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, childrenKeysSQL, sql.Named("id", parent.String()))
	if err != nil {
		return nil, fmt.Errorf("read the children: %w", err)
	}
	defer rows.Close()
	have := make(map[string]string)
	for rows.Next() {
		var key, id string
		if err := rows.Scan(&key, &id); err != nil {
			return nil, err
		}
		have[key] = id
	}
	return have, rows.Err()
}

// parentStep follows the ends of children, applied already in this
// transaction: it reads each parent and counts its children not final,
// decides (store.DecideParents) and applies, noting the wake-ups. It
// returns the parents it changed.
func (s *executor) parentStep(ctx context.Context, tx *jobWrite, wake *wakeups, ends []store.TaskEnd) ([]*job.Job, error) {
	ids := store.ParentsOf(ends)
	if len(ids) == 0 {
		return nil, nil
	}
	parents := make([]store.ParentNode, 0, len(ids))
	for _, id := range ids {
		p, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
		if errors.Is(err, job.ErrNotFound) {
			continue // deleted (retention, a take): nothing waits
		}
		if err != nil {
			return nil, fmt.Errorf("read parent %s: %w", id, err)
		}
		n := store.ParentNode{ID: id, Queue: p.Queue, Facts: job.FactsOf(p)}
		if err := tx.QueryRowContext(ctx, childrenPendingSQL, sql.Named("id", id.String())).Scan(&n.NotFinal); err != nil {
			return nil, fmt.Errorf("count the children of %s: %w", id, err)
		}
		parents = append(parents, n)
	}
	decided, err := store.DecideParents(parents, ends, false, fromMicro(tx.now))
	if err != nil {
		return nil, err
	}
	return s.applyStep(ctx, tx, wake, decided, nil)
}

// activeChildren reads the ids of a parent's children that are not
// final, in id order.
func activeChildren(ctx context.Context, tx *jobWrite, parent uuid.UUID) ([]uuid.UUID, error) {
	rows, err := tx.QueryContext(ctx, childrenActiveSQL, sql.Named("id", parent.String()))
	if err != nil {
		return nil, fmt.Errorf("read the children: %w", err)
	}
	defer rows.Close()
	var out []uuid.UUID
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		u, err := uuid.Parse(id)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
