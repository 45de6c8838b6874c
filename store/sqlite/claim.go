package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobClaim moves up to params.Max available jobs of params.Queue to
// running, best first, each under a fresh lease token, in one write
// transaction. SQLite has one writer at a time, so two claimers can never
// take the same job; the lock index makes a second running job of one
// lock_key impossible even so. The claim writes no journal entry: its
// attempted_at implies it (job.Journal).
func (s *executor) JobClaim(ctx context.Context, params store.ClaimParams) ([]*job.Job, error) {
	if params.Max <= 0 {
		return nil, nil
	}
	var jobs []*job.Job
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		ids, err := claimCandidates(ctx, tx.Tx, params, tx.now)
		if err != nil || len(ids) == 0 {
			return err
		}
		type claim struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}
		batch := make([]claim, len(ids))
		rank := make(map[uuid.UUID]int, len(ids))
		for i, id := range ids {
			token, err := uuid.NewRandom()
			if err != nil {
				return fmt.Errorf("lease token: %w", err)
			}
			batch[i] = claim{ID: id.String(), Token: token.String()}
			rank[id] = i
		}
		body, err := json.Marshal(batch)
		if err != nil {
			return err
		}
		if err := loadBatch(ctx, tx, body); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, claimJobsSQL,
			sql.Named("batch", string(body)),
			sql.Named("owner", params.Owner),
			sql.Named("now", tx.now),
			sql.Named("stamp", tx.stamp),
			sql.Named("default_timeout_us", nullMicros(params.DefaultTimeout)),
		)
		if err != nil {
			return err
		}
		if jobs, err = scanJobs(rows); err != nil {
			return err
		}
		if len(jobs) != len(ids) {
			return fmt.Errorf("claimed %d of %d candidates", len(jobs), len(ids))
		}
		// RETURNING has no order: give the batch back best first.
		sort.Slice(jobs, func(a, b int) bool { return rank[jobs[a].ID] < rank[jobs[b].ID] })
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: claim from %q: %w", params.Queue, err)
	}
	return jobs, nil
}

// claimCandidates returns the ids of up to limit jobs to claim, best first,
// at most one per lock_key. It reads more candidates than limit so
// that jobs sharing a lock_key do not starve the rest of the batch.
func claimCandidates(ctx context.Context, tx *sql.Tx, params store.ClaimParams, now int64) ([]uuid.UUID, error) {
	limit := params.Max
	caps := listJSON(params.Capabilities)
	if !caps.Valid {
		caps = sql.NullString{String: "[]", Valid: true}
	}
	after, afterPriority, afterRunAt, afterID := 0, any(nil), any(nil), any(nil)
	if c := params.After; c != nil {
		after, afterPriority, afterRunAt, afterID = 1, c.Priority, c.RunAt.UnixMicro(), c.ID.String()
	}
	rows, err := tx.QueryContext(ctx, claimCandidatesSQL,
		sql.Named("queue", params.Queue),
		sql.Named("now", now),
		sql.Named("scan", 2*limit+100),
		sql.Named("caps", caps.String),
		sql.Named("worker", sql.NullString{String: params.WorkerID, Valid: params.WorkerID != ""}),
		sql.Named("window", params.PreferWindow.Microseconds()),
		sql.Named("after", after),
		sql.Named("after_priority", afterPriority),
		sql.Named("after_run_at", afterRunAt),
		sql.Named("after_id", afterID),
	)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []uuid.UUID
	locks := make(map[string]bool)
	for len(ids) < limit && rows.Next() {
		var (
			id      string
			lockKey sql.NullString
		)
		if err := rows.Scan(&id, &lockKey); err != nil {
			return nil, err
		}
		if lockKey.Valid {
			if locks[lockKey.String] {
				continue
			}
			locks[lockKey.String] = true
		}
		uid, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("job id %q: %w", id, err)
		}
		ids = append(ids, uid)
	}
	return ids, rows.Err()
}
