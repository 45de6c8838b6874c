package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// KeyCreate stores an API key record; job.ErrDuplicate when its id or
// prefix is taken. A zero CreatedAt is now.
func (s *executor) KeyCreate(ctx context.Context, key store.APIKey) error {
	if err := store.CheckKey(key); err != nil {
		return err
	}
	scopes := key.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	scopesJSON, err := json.Marshal(scopes)
	if err != nil {
		return errorf("sqlite: create key %s: %w", key.ID, err)
	}
	queues, err := jsonList(key.Queues)
	if err != nil {
		return errorf("sqlite: create key %s: %w", key.ID, err)
	}
	created := key.CreatedAt.UnixMicro()
	if key.CreatedAt.IsZero() {
		created = s.now()
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, keyCreateSQL,
			sql.Named("id", key.ID),
			sql.Named("name", key.Name),
			sql.Named("prefix", key.Prefix),
			sql.Named("hash", key.Hash),
			sql.Named("scopes", string(scopesJSON)),
			sql.Named("created_at", created),
			sql.Named("worker_id", key.WorkerID),
			sql.Named("queues", queues),
		)
		return err
	})
	if isUniqueViolation(err) {
		return errorf("sqlite: create key %s: id or prefix taken: %w", key.ID, job.ErrDuplicate)
	}
	if err != nil {
		return errorf("sqlite: create key %s: %w", key.ID, err)
	}
	return nil
}

// KeyList returns every API key record, oldest first.
func (s *executor) KeyList(ctx context.Context) ([]store.APIKey, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: list keys: %w", err)
	}
	rows, err := q.QueryContext(ctx, keyListSQL)
	if err != nil {
		return nil, errorf("sqlite: list keys: %w", err)
	}
	defer rows.Close()
	var keys []store.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, errorf("sqlite: list keys: %w", err)
		}
		keys = append(keys, *k)
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("sqlite: list keys: %w", err)
	}
	return keys, nil
}

// KeyByPrefix returns the key whose public prefix is prefix, or
// job.ErrNotFound.
func (s *executor) KeyByPrefix(ctx context.Context, prefix string) (*store.APIKey, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: key by prefix: %w", err)
	}
	k, err := scanKeyWorker(q.QueryRowContext(ctx, keyByPrefixSQL, prefix))
	if err != nil {
		return nil, errorf("sqlite: key by prefix: %w", err)
	}
	return k, nil
}

// scanKeyWorker scans a key and its worker (key_by_prefix.sql): the
// key's columns, has_worker, then the worker's as scanWorker reads them.
func scanKeyWorker(sc scanner) (*store.APIKey, error) {
	var (
		k                   store.APIKey
		w                   store.Worker
		scopes, queues      string
		created             int64
		hasWorker           bool
		caps, meta, status  string
		wqueues             string
		disabled            int64
		beat                sql.NullInt64
		createdAt, updateAt int64
	)
	err := sc.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &scopes, &created, &k.WorkerID, &queues,
		&hasWorker, &w.ID, &w.Name, &caps, &meta, &status, &disabled, &beat,
		&w.JobsDone, &w.JobsFailed, &createdAt, &updateAt, &wqueues, &w.RunningJobs)
	if err != nil {
		return nil, notFound(err)
	}
	if k.Queues, err = queuePatterns(queues); err != nil {
		return nil, fmt.Errorf("key %s: queues: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return nil, fmt.Errorf("key %s: scopes: %w", k.ID, err)
	}
	k.CreatedAt = fromMicro(created)
	if !hasWorker {
		return &k, nil
	}
	if w.Capabilities, err = scanList(sql.NullString{String: caps, Valid: true}); err != nil {
		return nil, fmt.Errorf("worker %s: capabilities: %w", w.ID, err)
	}
	if w.Queues, err = queuePatterns(wqueues); err != nil {
		return nil, fmt.Errorf("worker %s: queues: %w", w.ID, err)
	}
	w.Metadata = json.RawMessage(meta)
	w.Status = store.WorkerStatus(status)
	w.Disabled = disabled != 0
	w.LastHeartbeatAt = fromNullMicro(beat)
	w.CreatedAt = fromMicro(createdAt)
	w.UpdatedAt = fromMicro(updateAt)
	k.Worker = &w
	return &k, nil
}

// KeyRevoke deletes a key; job.ErrNotFound when there is none.
func (s *executor) KeyRevoke(ctx context.Context, id string) error {
	var n int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, keyRevokeSQL, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err == nil && n == 0 {
		err = job.ErrNotFound
	}
	if err != nil {
		return errorf("sqlite: revoke key %s: %w", id, err)
	}
	return nil
}

func scanKey(sc scanner) (*store.APIKey, error) {
	var (
		k       store.APIKey
		scopes  string
		queues  string
		created int64
	)
	if err := sc.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &scopes, &created, &k.WorkerID, &queues); err != nil {
		return nil, notFound(err)
	}
	var err error
	if k.Queues, err = queuePatterns(queues); err != nil {
		return nil, fmt.Errorf("key %s: queues: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return nil, fmt.Errorf("key %s: scopes: %w", k.ID, err)
	}
	k.CreatedAt = fromMicro(created)
	return &k, nil
}

// isUniqueViolation reports whether err is SQLite refusing a duplicate in
// a unique index or primary key.
func isUniqueViolation(err error) bool {
	var e *sqlitedrv.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}
