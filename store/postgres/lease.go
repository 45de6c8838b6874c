package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobHeartbeat extends the leases still held, in one statement (one
// pinned round: each job a probe of the primary key). See store.Store.
func (s *executor) JobHeartbeat(ctx context.Context, owner string, leases []store.Lease) ([]store.HeartbeatResult, error) {
	results := make([]store.HeartbeatResult, len(leases))
	if len(leases) == 0 {
		return results, nil
	}
	ids, tokens := leaseArrays(leases)
	owners := make([]string, len(leases))
	for i, l := range leases {
		owners[i] = store.OwnerOf(l, owner)
	}
	held := make(map[[2]uuid.UUID]bool, len(leases)) // id and token -> cancel requested
	err := s.transact(ctx, func(r *rounds) error {
		return r.pinnedRound(ctx, true, func(b *pgx.Batch) {
			b.Queue(heartbeatSQL, s.now(), ids, tokens, owners)
		}, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			var id, token uuid.UUID
			var cancel bool
			_, err = pgx.ForEachRow(rows, []any{uuidDest(&id), uuidDest(&token), &cancel}, func() error {
				held[[2]uuid.UUID{id, token}] = cancel
				return nil
			})
			return err
		})
	})
	if err != nil {
		return nil, errorf("postgres: heartbeat: %w", err)
	}
	for i, l := range leases {
		cancel, ok := held[[2]uuid.UUID{l.ID, l.Token}]
		results[i] = store.HeartbeatResult{Held: ok, CancelRequested: cancel}
	}
	return results, nil
}

// JobSetProgress stores progress and extends the lease. See store.Store.
func (s *executor) JobSetProgress(ctx context.Context, lease store.Lease, progress job.Progress) (bool, error) {
	if err := store.CheckProgress(progress); err != nil {
		return false, err
	}
	doc, err := json.Marshal(progress)
	if err != nil {
		return false, errorf("postgres: progress of job %s: %w", lease.ID, err)
	}
	var cancel bool
	err = s.db.QueryRow(ctx, progressSQL, s.now(), pgUUID(lease.ID), pgUUID(lease.Token), doc, lease.Owner).Scan(&cancel)
	if err != nil {
		return false, errorf("postgres: progress of job %s: %w", lease.ID, leaseLost(err))
	}
	return cancel, nil
}

// JobSetCheckpoint stores the checkpoint and extends the lease. See
// store.Store.
func (s *executor) JobSetCheckpoint(ctx context.Context, lease store.Lease, checkpoint json.RawMessage) (bool, error) {
	if err := store.CheckCheckpoint(checkpoint); err != nil {
		return false, err
	}
	var doc []byte // nil clears the checkpoint
	if len(checkpoint) > 0 {
		doc = checkpoint
	}
	var cancel bool
	err := s.db.QueryRow(ctx, checkpointSQL, s.now(), pgUUID(lease.ID), pgUUID(lease.Token), doc, lease.Owner).Scan(&cancel)
	if err != nil {
		return false, errorf("postgres: checkpoint of job %s: %w", lease.ID, leaseLost(err))
	}
	return cancel, nil
}

// leaseLost maps "no rows" from a fenced write to job.ErrLeaseLost.
func leaseLost(err error) error {
	if err = notFound(err); errors.Is(err, job.ErrNotFound) {
		return job.ErrLeaseLost
	}
	return err
}

func leaseArrays(leases []store.Lease) (ids, tokens [][16]byte) {
	ids = make([][16]byte, len(leases))
	tokens = make([][16]byte, len(leases))
	for i, l := range leases {
		ids[i], tokens[i] = l.ID, l.Token
	}
	return ids, tokens
}
