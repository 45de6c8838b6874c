package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Children (store.DurableStore.JobSpawn; store/children.go for the
// rules and the order rows are locked in).

// JobSpawn spawns children of the job lease holds, fenced by the lease:
// the parent's row locked by the fence, its children read, the new ones
// inserted (JobInsertMany, in this transaction) and adopted.
func (s *executor) JobSpawn(ctx context.Context, lease store.Lease, p store.SpawnParams) ([]store.InsertResult, error) {
	if err := job.NormalizeChildren(p.Children, s.maxArgs, p.Limit()); err != nil {
		return nil, err
	}
	var out []store.InsertResult
	err := s.atomically(ctx, func(ex *executor) error {
		var (
			attempt, steps int
			cancel         bool
			at             time.Time
		)
		err := ex.tx.QueryRow(ctx, stepLeaseSQL, s.now(), pgUUID(lease.ID), pgUUID(lease.Token), lease.Owner).
			Scan(&attempt, &cancel, &steps, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			return job.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		var (
			workflow pgtype.UUID
			ref      string
		)
		if err := ex.tx.QueryRow(ctx, parentWorkflowSQL, pgUUID(lease.ID)).Scan(&workflow, &ref); err != nil {
			return fmt.Errorf("read the parent's workflow: %w", err)
		}
		have := make(map[string]uuid.UUID)
		rows, err := ex.tx.Query(ctx, childrenKeysSQL, pgUUID(lease.ID))
		if err != nil {
			return fmt.Errorf("read the children: %w", err)
		}
		var (
			key string
			id  uuid.UUID
		)
		if _, err := pgx.ForEachRow(rows, []any{&key, uuidDest(&id)}, func() error { have[key] = id; return nil }); err != nil {
			return fmt.Errorf("read the children: %w", err)
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
		var (
			ids        [][16]byte
			keys, refs []string
		)
		for i, c := range p.Children {
			if id, ok := have[c.Key]; ok {
				j, err := scanJob(ex.tx.QueryRow(ctx, jobGetSQL, pgUUID(id)))
				if err != nil {
					return fmt.Errorf("child %q: %w", c.Key, err)
				}
				out[i] = store.InsertResult{Job: j}
				continue
			}
			r := inserted[0]
			inserted = inserted[1:]
			r.Job.ParentID, r.Job.ChildKey = lease.ID, c.Key
			ids, keys, refs = append(ids, pgUUID(r.Job.ID)), append(keys, c.Key), append(refs, store.ChildRef(ref, c.Key))
			out[i] = r
		}
		if len(ids) > 0 {
			var wf *[16]byte
			if workflow.Valid {
				wf = &workflow.Bytes
			}
			tag, err := ex.tx.Exec(ctx, childAdoptSQL, pgUUID(lease.ID), ids, keys, wf, refs)
			if err != nil {
				return fmt.Errorf("adopt the children: %w", err)
			}
			if tag.RowsAffected() != int64(len(ids)) {
				return fmt.Errorf("adopt the children: %d of %d adopted", tag.RowsAffected(), len(ids))
			}
			if workflow.Valid {
				if _, err := ex.tx.Exec(ctx, workflowGrowSQL, workflow.Bytes, len(ids), s.now()); err != nil {
					return fmt.Errorf("count the children in the workflow: %w", err)
				}
				for i := range out {
					if out[i].Created {
						if out[i].Job, err = scanJob(ex.tx.QueryRow(ctx, jobGetSQL, pgUUID(out[i].Job.ID))); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, errorf("postgres: spawn children of job %s: %w", lease.ID, err)
	}
	return out, nil
}

// lockParents is the children's step of lockStep: it locks the parents
// of the children ends take to a final state (after every other row the
// transaction locked, in id order), counts their children not final in
// a statement after the lock, and decides (store.DecideParents) — the
// ends are not applied yet, so the counts still count them.
func (s *executor) lockParents(ctx context.Context, r *rounds, ends []store.TaskEnd, at time.Time) ([]store.TaskDecided, error) {
	ids := store.ParentsOf(ends)
	if len(ids) == 0 {
		return nil, nil
	}
	arg := make([][16]byte, len(ids))
	for i, id := range ids {
		arg[i] = id
	}
	var parents []store.ParentNode
	err := r.pinnedRound(ctx, false, func(b *pgx.Batch) {
		b.Queue(parentsLockSQL, arg)
		b.Queue(childrenCountSQL, arg)
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("lock the parents: %w", err)
		}
		nodes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TaskNode, error) { return scanTaskNode(row, nil) })
		if err != nil {
			return fmt.Errorf("lock the parents: %w", err)
		}
		counts := make(map[uuid.UUID]int, len(ids))
		rows, err = br.Query()
		if err != nil {
			return fmt.Errorf("count the children: %w", err)
		}
		var (
			id uuid.UUID
			n  int
		)
		if _, err := pgx.ForEachRow(rows, []any{uuidDest(&id), &n}, func() error { counts[id] = n; return nil }); err != nil {
			return fmt.Errorf("count the children: %w", err)
		}
		for _, nd := range nodes {
			parents = append(parents, store.ParentNode{ID: nd.ID, Queue: nd.Queue, Facts: nd.Facts, NotFinal: counts[nd.ID]})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return store.DecideParents(parents, ends, true, at)
}
