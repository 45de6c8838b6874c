package sqlite

import (
	"context"
	"database/sql"
	_ "embed" // the queries below
	"encoding/json"
	"fmt"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var (
	//go:embed sql/session_create.sql
	sessionCreateSQL string
	//go:embed sql/session_expired_delete.sql
	sessionExpiredDeleteSQL string
	//go:embed sql/session_get.sql
	sessionGetSQL string
	//go:embed sql/session_delete.sql
	sessionDeleteSQL string
)

// SessionCreate stores a dashboard session created now and expiring
// after ttl, and deletes the expired ones, in one transaction;
// job.ErrDuplicate when its id is taken.
func (s *executor) SessionCreate(ctx context.Context, sess store.Session, ttl time.Duration) (*store.Session, error) {
	if err := store.CheckSession(sess, ttl); err != nil {
		return nil, err
	}
	var keyID *string
	if sess.KeyID != "" {
		keyID = &sess.KeyID
	}
	var tag []byte
	if len(sess.SecretTag) > 0 {
		tag = sess.SecretTag
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		if _, err := tx.ExecContext(ctx, sessionExpiredDeleteSQL, sql.Named("now", now)); err != nil {
			return err
		}
		expires := now + ttl.Microseconds()
		_, err := tx.ExecContext(ctx, sessionCreateSQL,
			sql.Named("id", sess.ID), sql.Named("key_id", keyID), sql.Named("secret_tag", tag),
			sql.Named("created_at", now), sql.Named("expires_at", expires))
		sess.CreatedAt, sess.ExpiresAt = fromMicro(now), fromMicro(expires)
		return err
	})
	if isUniqueViolation(err) {
		return nil, errorf("sqlite: create dashboard session: id taken: %w", job.ErrDuplicate)
	}
	if err != nil {
		return nil, errorf("sqlite: create dashboard session: %w", err)
	}
	sess.Key = nil
	return &sess, nil
}

// SessionGet returns a dashboard session that has not expired, with its
// API key, or job.ErrNotFound (none, expired, or its key revoked).
func (s *executor) SessionGet(ctx context.Context, id []byte) (*store.Session, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: get dashboard session: %w", err)
	}
	sess, err := scanSession(q.QueryRowContext(ctx, sessionGetSQL, sql.Named("id", id), sql.Named("now", s.now())))
	if err != nil {
		return nil, errorf("sqlite: get dashboard session: %w", err)
	}
	return sess, nil
}

// SessionDelete deletes a dashboard session; job.ErrNotFound when there
// is none.
func (s *executor) SessionDelete(ctx context.Context, id []byte) error {
	var n int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, sessionDeleteSQL, sql.Named("id", id))
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
		return errorf("sqlite: delete dashboard session: %w", err)
	}
	return nil
}

// scanSession reads a row of session_get.sql: the session, then its key's
// columns as scanKey reads them, NULL for the admin secret's session.
func scanSession(sc scanner) (*store.Session, error) {
	var (
		sess                        store.Session
		created, expires            int64
		keyID, name, prefix, scopes sql.NullString
		queues                      sql.NullString
		hash                        []byte
		keyCreated                  sql.NullInt64
		workerID                    string
	)
	err := sc.Scan(&sess.ID, &sess.KeyID, &sess.SecretTag, &created, &expires,
		&keyID, &name, &prefix, &hash, &scopes, &keyCreated, &workerID, &queues)
	if err != nil {
		return nil, notFound(err)
	}
	sess.CreatedAt, sess.ExpiresAt = fromMicro(created), fromMicro(expires)
	if !keyID.Valid {
		return &sess, nil
	}
	k := &store.APIKey{ID: keyID.String, Name: name.String, Prefix: prefix.String, Hash: hash,
		CreatedAt: fromMicro(keyCreated.Int64), WorkerID: workerID}
	if err := json.Unmarshal([]byte(scopes.String), &k.Scopes); err != nil {
		return nil, fmt.Errorf("key %s: scopes: %w", k.ID, err)
	}
	if k.Queues, err = queuePatterns(queues.String); err != nil {
		return nil, fmt.Errorf("key %s: queues: %w", k.ID, err)
	}
	sess.Key = k
	return &sess, nil
}
