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
//
// The candidates of a queue that is limited or throttled are none; when
// there are none, the queue's settings say whether it is limited, and
// then the claim takes the limited path (flowLimits), in the same
// transaction, which holds the file's one write lock: what runs cannot
// change meanwhile. A queue without limits pays for nothing more than a
// probe of its settings row, in the statement that reads the candidates.
func (s *executor) JobClaim(ctx context.Context, params store.ClaimParams) ([]*job.Job, error) {
	if params.Max <= 0 {
		return nil, nil
	}
	var jobs []*job.Job
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		ids, partitions, err := claimCandidates(ctx, tx.Tx, params, tx.now, nil)
		if err != nil {
			return err
		}
		var limits *flowLimits
		if len(ids) == 0 {
			if limits, err = readFlowLimits(ctx, tx, params, s.counted); err != nil || limits == nil {
				return err
			}
			if ids, partitions, err = claimCandidates(ctx, tx.Tx, params, tx.now, limits); err != nil {
				return err
			}
		}
		if len(ids) == 0 {
			return nil
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
		var durable map[uuid.UUID]string
		if jobs, durable, err = scanClaimed(rows); err != nil {
			return err
		}
		if len(jobs) != len(ids) {
			return fmt.Errorf("claimed %d of %d candidates", len(jobs), len(ids))
		}
		// RETURNING has no order: give the batch back best first.
		sort.Slice(jobs, func(a, b int) bool { return rank[jobs[a].ID] < rank[jobs[b].ID] })
		if err := readInputs(ctx, tx, jobs); err != nil {
			return err
		}
		if err := readResume(ctx, tx, jobs, durable); err != nil {
			return err
		}
		if limits != nil {
			return limits.advance(ctx, tx, params.Queue, partitions)
		}
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: claim from %q: %w", params.Queue, err)
	}
	return jobs, nil
}

// claimCandidates returns the ids of up to params.Max jobs to claim, best
// first, at most one per lock_key, and their partitions ("" for none). It
// reads more candidates than it may take so that jobs sharing a lock_key
// do not starve the rest of the batch. With limits (a limited queue's
// claim), it takes at most limits.room, within each partition's room, and
// skips the partitions that can start nothing while it reads; without,
// a limited or throttled queue has no candidates.
func claimCandidates(ctx context.Context, tx *sql.Tx, params store.ClaimParams, now int64, limits *flowLimits) ([]uuid.UUID, []string, error) {
	limit, limited, blocked := params.Max, 0, sql.NullString{}
	if limits != nil {
		limit, limited = limits.room, 1
		blocked = listJSON(limits.blocked)
	}
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
		sql.Named("limited", limited),
		sql.Named("blocked", blocked),
	)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var (
		ids        []uuid.UUID
		partitions []string
	)
	locks := make(map[string]bool)
	for len(ids) < limit && rows.Next() {
		var (
			id, partition string
			lockKey       sql.NullString
		)
		if err := rows.Scan(&id, &lockKey, &partition); err != nil {
			return nil, nil, err
		}
		if lockKey.Valid {
			if locks[lockKey.String] {
				continue
			}
			locks[lockKey.String] = true
		}
		if limits != nil && !limits.admit(partition) {
			continue
		}
		uid, err := uuid.Parse(id)
		if err != nil {
			return nil, nil, fmt.Errorf("job id %q: %w", id, err)
		}
		ids, partitions = append(ids, uid), append(partitions, partition)
	}
	return ids, partitions, rows.Err()
}
