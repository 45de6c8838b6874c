package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobHeartbeat extends, in one transaction, the leases still held (by
// their token and owner, see store.Store), and reports for each whether
// it is held and whether cancel was requested. updated_at does not move.
func (s *executor) JobHeartbeat(ctx context.Context, owner string, leases []store.Lease) ([]store.HeartbeatResult, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	results := make([]store.HeartbeatResult, len(leases))
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		stmt, err := tx.PrepareContext(ctx, leaseHeartbeatSQL)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i, l := range leases {
			var cancel bool
			err := stmt.QueryRowContext(ctx,
				sql.Named("id", l.ID.String()),
				sql.Named("token", l.Token.String()),
				sql.Named("owner", store.OwnerOf(l, owner)),
				sql.Named("now", now),
			).Scan(&cancel)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				// Lost: the zero result.
			case err != nil:
				return fmt.Errorf("job %s: %w", l.ID, err)
			default:
				results[i] = store.HeartbeatResult{Held: true, CancelRequested: cancel}
			}
		}
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: heartbeat of %s: %w", owner, err)
	}
	return results, nil
}

// JobSetProgress stores progress and extends the lease, fenced by the
// lease (token and owner); job.ErrLeaseLost when the lease is not held.
func (s *executor) JobSetProgress(ctx context.Context, lease store.Lease, progress job.Progress) (bool, error) {
	if err := store.CheckProgress(progress); err != nil {
		return false, err
	}
	body, err := json.Marshal(progress)
	if err != nil {
		return false, errorf("sqlite: progress of job %s: %w", lease.ID, err)
	}
	var cancel bool
	err = s.jobsTx(ctx, func(tx *jobWrite) error {
		return tx.QueryRowContext(ctx, leaseProgressSQL,
			sql.Named("id", lease.ID.String()),
			sql.Named("token", lease.Token.String()),
			sql.Named("owner", lease.Owner),
			sql.Named("progress", string(body)),
			sql.Named("now", tx.now),
			sql.Named("stamp", tx.stamp),
		).Scan(&cancel)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return false, errorf("sqlite: progress of job %s: %w", lease.ID, job.ErrLeaseLost)
	}
	if err != nil {
		return false, errorf("sqlite: progress of job %s: %w", lease.ID, err)
	}
	return cancel, nil
}

// JobSetCheckpoint stores the checkpoint and extends the lease, fenced by
// the lease (token and owner); job.ErrLeaseLost when the lease is not
// held. It reports whether cancel was requested.
func (s *executor) JobSetCheckpoint(ctx context.Context, lease store.Lease, checkpoint json.RawMessage) (bool, error) {
	if err := store.CheckCheckpoint(checkpoint); err != nil {
		return false, err
	}
	var cancel bool
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		return tx.QueryRowContext(ctx, leaseCheckpointSQL,
			sql.Named("id", lease.ID.String()),
			sql.Named("token", lease.Token.String()),
			sql.Named("owner", lease.Owner),
			sql.Named("checkpoint", nullJSON(checkpoint)),
			sql.Named("now", tx.now),
			sql.Named("stamp", tx.stamp),
		).Scan(&cancel)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return false, errorf("sqlite: checkpoint of job %s: %w", lease.ID, job.ErrLeaseLost)
	}
	if err != nil {
		return false, errorf("sqlite: checkpoint of job %s: %w", lease.ID, err)
	}
	return cancel, nil
}
