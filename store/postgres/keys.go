package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// KeyCreate stores an API key record; a zero CreatedAt is now.
// job.ErrDuplicate when its id or prefix is taken.
func (s *executor) KeyCreate(ctx context.Context, key store.APIKey) error {
	if err := store.CheckKey(key); err != nil {
		return err
	}
	scopes := key.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	_, err := s.db.Exec(ctx, keyCreateSQL, s.now(), key.ID, key.Name, key.Prefix, key.Hash, scopes, timePtr(key.CreatedAt), nullText(key.WorkerID), textArray(key.Queues))
	if uniqueViolation(err, "jobd_api_keys_pkey") || uniqueViolation(err, "jobd_api_keys_prefix_key") {
		err = fmt.Errorf("id or prefix taken: %w", job.ErrDuplicate)
	}
	if err != nil {
		return errorf("postgres: create api key %q: %w", key.ID, err)
	}
	return nil
}

// KeyList returns every API key record, oldest first.
func (s *executor) KeyList(ctx context.Context) ([]store.APIKey, error) {
	rows, err := s.db.Query(ctx, keyListSQL)
	if err != nil {
		return nil, errorf("postgres: list api keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, scanKey)
	if err != nil {
		return nil, errorf("postgres: list api keys: %w", err)
	}
	return keys, nil
}

// KeyByPrefix returns the key whose public prefix is prefix, or
// job.ErrNotFound.
func (s *executor) KeyByPrefix(ctx context.Context, prefix string) (*store.APIKey, error) {
	rows, err := s.db.Query(ctx, keyByPrefixSQL, prefix)
	if err != nil {
		return nil, errorf("postgres: find api key: %w", err)
	}
	key, err := pgx.CollectExactlyOneRow(rows, scanKeyWorker)
	if err != nil {
		return nil, errorf("postgres: find api key: %w", notFound(err))
	}
	return &key, nil
}

// scanKeyWorker scans a key and its worker (key_by_prefix.sql).
func scanKeyWorker(row pgx.CollectableRow) (store.APIKey, error) {
	var (
		k          store.APIKey
		w          store.Worker
		queues, wq []string
		hasWorker  bool
		status     string
	)
	err := row.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &k.Scopes, &k.CreatedAt, &k.WorkerID, &queues,
		&hasWorker, &w.ID, &w.Name, &w.Capabilities, &w.Metadata, &status, &w.Disabled, &w.LastHeartbeatAt,
		&w.JobsDone, &w.JobsFailed, &w.CreatedAt, &w.UpdatedAt, &wq, &w.RunningJobs)
	if err != nil {
		return k, err
	}
	if len(k.Scopes) == 0 {
		k.Scopes = nil
	}
	if len(queues) > 0 {
		k.Queues = job.QueuePatterns(queues)
	}
	if hasWorker {
		w.Status = store.WorkerStatus(status)
		if len(w.Capabilities) == 0 {
			w.Capabilities = nil
		}
		if len(wq) > 0 {
			w.Queues = job.QueuePatterns(wq)
		}
		k.Worker = &w
	}
	return k, nil
}

// KeyRevoke deletes a key; job.ErrNotFound when there is none.
func (s *executor) KeyRevoke(ctx context.Context, id string) error {
	tag, err := s.db.Exec(ctx, keyRevokeSQL, id)
	if err != nil {
		return errorf("postgres: revoke api key %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return errorf("postgres: revoke api key %q: %w", id, job.ErrNotFound)
	}
	return nil
}

func scanKey(row pgx.CollectableRow) (store.APIKey, error) {
	var (
		k      store.APIKey
		queues []string
	)
	err := row.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &k.Scopes, &k.CreatedAt, &k.WorkerID, &queues)
	if len(k.Scopes) == 0 {
		k.Scopes = nil
	}
	if len(queues) > 0 {
		k.Queues = job.QueuePatterns(queues)
	}
	return k, err
}
