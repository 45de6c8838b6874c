package postgres

import (
	"context"
	_ "embed" // the queries below
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var (
	//go:embed sql/session_create.sql
	sessionCreateSQL string
	//go:embed sql/session_get.sql
	sessionGetSQL string
	//go:embed sql/session_delete.sql
	sessionDeleteSQL string
)

// SessionCreate stores a dashboard session created now and expiring
// after ttl, deleting the expired ones in the same statement;
// job.ErrDuplicate when its id is taken.
func (s *executor) SessionCreate(ctx context.Context, sess store.Session, ttl time.Duration) (*store.Session, error) {
	if err := store.CheckSession(sess, ttl); err != nil {
		return nil, err
	}
	row := s.db.QueryRow(ctx, sessionCreateSQL, s.now(), sess.ID, nullText(sess.KeyID), nullBytes(sess.SecretTag), ttl)
	err := row.Scan(&sess.CreatedAt, &sess.ExpiresAt)
	if uniqueViolation(err, "jobd_dashboard_sessions_pkey") {
		err = fmt.Errorf("id taken: %w", job.ErrDuplicate)
	}
	if err != nil {
		return nil, errorf("postgres: create dashboard session: %w", err)
	}
	sess.Key = nil
	return &sess, nil
}

// SessionGet returns a dashboard session that has not expired, with its
// API key, or job.ErrNotFound (none, expired, or its key revoked).
func (s *executor) SessionGet(ctx context.Context, id []byte) (*store.Session, error) {
	rows, err := s.db.Query(ctx, sessionGetSQL, s.now(), id)
	if err != nil {
		return nil, errorf("postgres: get dashboard session: %w", err)
	}
	sess, err := pgx.CollectExactlyOneRow(rows, scanSession)
	if err != nil {
		return nil, errorf("postgres: get dashboard session: %w", notFound(err))
	}
	return &sess, nil
}

// SessionDelete deletes a dashboard session; job.ErrNotFound when there
// is none.
func (s *executor) SessionDelete(ctx context.Context, id []byte) error {
	tag, err := s.db.Exec(ctx, sessionDeleteSQL, id)
	if err != nil {
		return errorf("postgres: delete dashboard session: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return errorf("postgres: delete dashboard session: %w", job.ErrNotFound)
	}
	return nil
}

// scanSession reads a row of session_get.sql: the session, then its key's
// columns as scanKey reads them, NULL for the admin secret's session.
func scanSession(row pgx.CollectableRow) (store.Session, error) {
	var (
		sess                store.Session
		keyID, name, prefix *string
		hash                []byte
		scopes              []string
		keyCreated          *time.Time
		workerID            string
		queues              []string
	)
	err := row.Scan(&sess.ID, &sess.KeyID, &sess.SecretTag, &sess.CreatedAt, &sess.ExpiresAt,
		&keyID, &name, &prefix, &hash, &scopes, &keyCreated, &workerID, &queues)
	if err != nil || keyID == nil {
		return sess, err
	}
	k := &store.APIKey{ID: *keyID, Name: *name, Prefix: *prefix, Hash: hash, Scopes: scopes, CreatedAt: *keyCreated, WorkerID: workerID}
	if len(k.Scopes) == 0 {
		k.Scopes = nil
	}
	if len(queues) > 0 {
		k.Queues = job.QueuePatterns(queues)
	}
	sess.Key = k
	return sess, nil
}

// nullBytes is b, or NULL when it is empty.
func nullBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
