package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// WebhookCreate stores a subscription; job.ErrDuplicate when its id is
// taken.
func (s *executor) WebhookCreate(ctx context.Context, w store.Webhook) error {
	if err := store.CheckWebhook(w, true); err != nil {
		return err
	}
	_, err := s.db.Exec(ctx, webhookCreateSQL, s.now(), w.ID, w.URL, w.Events, w.Secret,
		nullText(w.Queue), nullText(w.Kind), w.Config)
	if uniqueViolation(err, "jobd_webhooks_pkey") {
		err = fmt.Errorf("id taken: %w", job.ErrDuplicate)
	}
	if err != nil {
		return errorf("postgres: create webhook %q: %w", w.ID, err)
	}
	return nil
}

// WebhookGet returns one subscription, or job.ErrNotFound.
func (s *executor) WebhookGet(ctx context.Context, id string) (*store.Webhook, error) {
	rows, err := s.db.Query(ctx, webhookGetSQL, id)
	if err != nil {
		return nil, errorf("postgres: get webhook %q: %w", id, err)
	}
	w, err := pgx.CollectExactlyOneRow(rows, scanWebhook)
	if err != nil {
		return nil, errorf("postgres: get webhook %q: %w", id, notFound(err))
	}
	return &w, nil
}

// WebhookList returns every subscription, oldest first.
func (s *executor) WebhookList(ctx context.Context) ([]store.Webhook, error) {
	rows, err := s.db.Query(ctx, webhookListSQL)
	if err != nil {
		return nil, errorf("postgres: list webhooks: %w", err)
	}
	ws, err := pgx.CollectRows(rows, scanWebhook)
	if err != nil {
		return nil, errorf("postgres: list webhooks: %w", err)
	}
	return ws, nil
}

// WebhookUpdate replaces a subscription (its secret only when given).
func (s *executor) WebhookUpdate(ctx context.Context, w store.Webhook) (*store.Webhook, error) {
	if err := store.CheckWebhook(w, false); err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, webhookUpdateSQL, s.now(), w.ID, w.URL, w.Events, nullText(w.Secret),
		nullText(w.Queue), nullText(w.Kind), w.Config)
	if err != nil {
		return nil, errorf("postgres: update webhook %q: %w", w.ID, err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, scanWebhook)
	if err != nil {
		return nil, errorf("postgres: update webhook %q: %w", w.ID, notFound(err))
	}
	return &out, nil
}

// WebhookDelete deletes a subscription and its rate limits.
func (s *executor) WebhookDelete(ctx context.Context, id string) error {
	var n int
	if err := s.db.QueryRow(ctx, webhookDeleteSQL, id).Scan(&n); err != nil {
		return errorf("postgres: delete webhook %q: %w", id, err)
	}
	if n == 0 {
		return errorf("postgres: delete webhook %q: %w", id, job.ErrNotFound)
	}
	return nil
}

func scanWebhook(row pgx.CollectableRow) (store.Webhook, error) {
	var w store.Webhook
	err := row.Scan(&w.ID, &w.URL, &w.Events, &w.Secret, &w.Queue, &w.Kind, &w.Config, &w.CreatedAt, &w.UpdatedAt)
	return w, err
}

// WebhookEventsTake deletes and returns up to limit events of the outbox,
// oldest first.
func (s *executor) WebhookEventsTake(ctx context.Context, limit int) ([]store.WebhookEvent, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, webhookEventsTakeSQL, limit)
	if err != nil {
		return nil, errorf("postgres: take webhook events: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.WebhookEvent, error) {
		var (
			e                 store.WebhookEvent
			jobID, workflowID pgtype.UUID
			workflowState     string
		)
		err := row.Scan(&e.ID, &e.Type, &e.At, &jobID, &e.Queue, &e.Kind, &e.Attempt, &e.MaxAttempts,
			&e.Error, &e.FinishedAt, &e.URL, &e.WorkerID, &e.WorkerName, &workflowID, &e.WorkflowName, &workflowState)
		if jobID.Valid {
			e.JobID = uuid.UUID(jobID.Bytes)
		}
		if workflowID.Valid {
			e.WorkflowID = uuid.UUID(workflowID.Bytes)
		}
		e.WorkflowState = job.WorkflowState(workflowState)
		return e, err
	})
	if err != nil {
		return nil, errorf("postgres: take webhook events: %w", err)
	}
	return events, nil
}

// WebhookLimitsLock returns the rate limits of keys, created when
// missing, locked until the transaction ends, in key order.
func (s *executor) WebhookLimitsLock(ctx context.Context, keys []store.WebhookLimitKey) ([]store.WebhookLimit, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	hooks, events, names := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		hooks[i], events[i], names[i] = k.Webhook, k.Event, k.Key
	}
	rows, err := s.db.Query(ctx, webhookLimitsLockSQL, hooks, events, names)
	if err != nil {
		return nil, errorf("postgres: lock webhook limits: %w", err)
	}
	limits, err := pgx.CollectRows(rows, scanLimit)
	if err != nil {
		return nil, errorf("postgres: lock webhook limits: %w", err)
	}
	slices.SortFunc(limits, func(a, b store.WebhookLimit) int {
		switch {
		case a.Less(b.WebhookLimitKey):
			return -1
		case b.Less(a.WebhookLimitKey):
			return 1
		}
		return 0
	})
	return limits, nil
}

// WebhookLimitsSave writes rate limits.
func (s *executor) WebhookLimitsSave(ctx context.Context, limits []store.WebhookLimit) error {
	if len(limits) == 0 {
		return nil
	}
	n := len(limits)
	var (
		hooks, events, names = make([]string, n), make([]string, n), make([]string, n)
		sent, starts         = make([]*time.Time, n), make([]*time.Time, n)
		suppressed, counts   = make([]int32, n), make([]int32, n)
	)
	for i, l := range limits {
		hooks[i], events[i], names[i] = l.Webhook, l.Event, l.Key
		sent[i], starts[i] = l.SentAt, l.WindowStart
		suppressed[i], counts[i] = int32(min(l.Suppressed, 1<<31-1)), int32(min(l.WindowCount, 1<<31-1))
	}
	if _, err := s.db.Exec(ctx, webhookLimitsSaveSQL, hooks, events, names, sent, suppressed, starts, counts); err != nil {
		return errorf("postgres: save webhook limits: %w", err)
	}
	return nil
}

// WebhookLimitsDue returns, locked, up to limit rate limits with
// suppressed alerts that last sent one at or before sentBefore.
func (s *executor) WebhookLimitsDue(ctx context.Context, sentBefore time.Time, limit int) ([]store.WebhookLimit, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, webhookLimitsDueSQL, sentBefore, limit)
	if err != nil {
		return nil, errorf("postgres: due webhook limits: %w", err)
	}
	limits, err := pgx.CollectRows(rows, scanLimit)
	if err != nil {
		return nil, errorf("postgres: due webhook limits: %w", err)
	}
	return limits, nil
}

func scanLimit(row pgx.CollectableRow) (store.WebhookLimit, error) {
	var l store.WebhookLimit
	err := row.Scan(&l.Webhook, &l.Event, &l.Key, &l.SentAt, &l.Suppressed, &l.WindowStart, &l.WindowCount)
	return l, err
}

// SettingInit stores value under name unless one is stored, and returns
// the stored one.
func (s *executor) SettingInit(ctx context.Context, name, value string) (string, error) {
	if err := job.CheckText("setting", name+value); err != nil {
		return "", err
	}
	var stored string
	if err := s.db.QueryRow(ctx, settingInitSQL, s.now(), name, value).Scan(&stored); err != nil {
		return "", errorf("postgres: init setting %q: %w", name, err)
	}
	return stored, nil
}

// SettingGet returns the value stored under name, or job.ErrNotFound.
func (s *executor) SettingGet(ctx context.Context, name string) (string, error) {
	var v string
	if err := s.db.QueryRow(ctx, settingGetSQL, name).Scan(&v); err != nil {
		return "", errorf("postgres: get setting %q: %w", name, notFound(err))
	}
	return v, nil
}
