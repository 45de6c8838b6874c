package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// WebhookCreate stores a subscription; job.ErrDuplicate when its id is
// taken.
func (s *executor) WebhookCreate(ctx context.Context, w store.Webhook) error {
	if err := store.CheckWebhook(w, true); err != nil {
		return err
	}
	events, err := json.Marshal(w.Events)
	if err != nil {
		return errorf("sqlite: create webhook %s: %w", w.ID, err)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, webhookCreateSQL,
			sql.Named("id", w.ID), sql.Named("url", w.URL), sql.Named("events", string(events)),
			sql.Named("secret", w.Secret), sql.Named("queue", w.Queue), sql.Named("kind", w.Kind),
			sql.Named("config", w.Config), sql.Named("now", s.now()))
		return err
	})
	if isUniqueViolation(err) {
		return errorf("sqlite: create webhook %s: id taken: %w", w.ID, job.ErrDuplicate)
	}
	if err != nil {
		return errorf("sqlite: create webhook %s: %w", w.ID, err)
	}
	return nil
}

// WebhookGet returns one subscription, or job.ErrNotFound.
func (s *executor) WebhookGet(ctx context.Context, id string) (*store.Webhook, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: get webhook %s: %w", id, err)
	}
	w, err := scanWebhook(q.QueryRowContext(ctx, webhookGetSQL, sql.Named("id", id)))
	if err != nil {
		return nil, errorf("sqlite: get webhook %s: %w", id, notFound(err))
	}
	return w, nil
}

// WebhookList returns every subscription, oldest first.
func (s *executor) WebhookList(ctx context.Context) ([]store.Webhook, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: list webhooks: %w", err)
	}
	rows, err := q.QueryContext(ctx, webhookListSQL)
	if err != nil {
		return nil, errorf("sqlite: list webhooks: %w", err)
	}
	defer rows.Close()
	var out []store.Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, errorf("sqlite: list webhooks: %w", err)
		}
		out = append(out, *w)
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("sqlite: list webhooks: %w", err)
	}
	return out, nil
}

// WebhookUpdate replaces a subscription (its secret only when given).
func (s *executor) WebhookUpdate(ctx context.Context, w store.Webhook) (*store.Webhook, error) {
	if err := store.CheckWebhook(w, false); err != nil {
		return nil, err
	}
	events, err := json.Marshal(w.Events)
	if err != nil {
		return nil, errorf("sqlite: update webhook %s: %w", w.ID, err)
	}
	var out *store.Webhook
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = scanWebhook(tx.QueryRowContext(ctx, webhookUpdateSQL,
			sql.Named("id", w.ID), sql.Named("url", w.URL), sql.Named("events", string(events)),
			sql.Named("secret", w.Secret), sql.Named("queue", w.Queue), sql.Named("kind", w.Kind),
			sql.Named("config", w.Config), sql.Named("now", s.now())))
		return notFound(err)
	})
	if err != nil {
		return nil, errorf("sqlite: update webhook %s: %w", w.ID, err)
	}
	return out, nil
}

// WebhookDelete deletes a subscription and its rate limits, in one
// transaction.
func (s *executor) WebhookDelete(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, webhookDeleteSQL, sql.Named("id", id))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, job.ErrNotFound)
		}
		_, err = tx.ExecContext(ctx, webhookLimitsDeleteSQL, sql.Named("id", id))
		return err
	})
	if err != nil {
		return errorf("sqlite: delete webhook %s: %w", id, err)
	}
	return nil
}

func scanWebhook(sc scanner) (*store.Webhook, error) {
	var (
		w                    store.Webhook
		events               string
		createdAt, updatedAt int64
	)
	if err := sc.Scan(&w.ID, &w.URL, &events, &w.Secret, &w.Queue, &w.Kind, &w.Config, &createdAt, &updatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(events), &w.Events); err != nil {
		return nil, fmt.Errorf("webhook %s: events: %w", w.ID, err)
	}
	w.CreatedAt, w.UpdatedAt = fromMicro(createdAt), fromMicro(updatedAt)
	return &w, nil
}

// WebhookEventsTake deletes and returns up to limit events of the outbox,
// oldest first.
func (s *executor) WebhookEventsTake(ctx context.Context, limit int) ([]store.WebhookEvent, error) {
	if limit <= 0 {
		return nil, nil
	}
	var events []store.WebhookEvent
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, webhookEventsTakeSQL, sql.Named("limit", limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				e                 store.WebhookEvent
				at                int64
				jobID, workflowID string
				workflowState     string
				finishedAt        sql.NullInt64
			)
			if err := rows.Scan(&e.ID, &e.Type, &at, &jobID, &e.Queue, &e.Kind, &e.Attempt, &e.MaxAttempts,
				&e.Error, &finishedAt, &e.URL, &e.WorkerID, &e.WorkerName, &workflowID, &e.WorkflowName, &workflowState); err != nil {
				return err
			}
			if jobID != "" {
				if e.JobID, err = uuid.Parse(jobID); err != nil {
					return fmt.Errorf("event %d: job id %q: %w", e.ID, jobID, err)
				}
			}
			if workflowID != "" {
				if e.WorkflowID, err = uuid.Parse(workflowID); err != nil {
					return fmt.Errorf("event %d: workflow id %q: %w", e.ID, workflowID, err)
				}
			}
			e.WorkflowState = job.WorkflowState(workflowState)
			e.At, e.FinishedAt = fromMicro(at), fromNullMicro(finishedAt)
			events = append(events, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, errorf("sqlite: take webhook events: %w", err)
	}
	// RETURNING yields the rows in no promised order.
	sortEvents(events)
	return events, nil
}

func sortEvents(events []store.WebhookEvent) {
	for i := 1; i < len(events); i++ {
		for j := i; j > 0 && events[j].ID < events[j-1].ID; j-- {
			events[j], events[j-1] = events[j-1], events[j]
		}
	}
}

// WebhookLimitsLock returns the rate limits of keys, created when
// missing, in key order; the write lock of the transaction keeps them.
func (s *executor) WebhookLimitsLock(ctx context.Context, keys []store.WebhookLimitKey) ([]store.WebhookLimit, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	triples := make([][3]string, len(keys))
	for i, k := range keys {
		triples[i] = [3]string{k.Webhook, k.Event, k.Key}
	}
	body, err := json.Marshal(triples)
	if err != nil {
		return nil, errorf("sqlite: lock webhook limits: %w", err)
	}
	var limits []store.WebhookLimit
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, webhookLimitsLockSQL, sql.Named("keys", string(body))); err != nil {
			return err
		}
		var err error
		limits, err = queryLimits(ctx, tx, webhookLimitsSelectSQL, sql.Named("keys", string(body)))
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: lock webhook limits: %w", err)
	}
	return limits, nil
}

// WebhookLimitsSave writes rate limits.
func (s *executor) WebhookLimitsSave(ctx context.Context, limits []store.WebhookLimit) error {
	if len(limits) == 0 {
		return nil
	}
	type row struct {
		Webhook     string `json:"webhook"`
		Event       string `json:"event"`
		Key         string `json:"key"`
		SentAt      *int64 `json:"sent_at,omitempty"`
		Suppressed  int    `json:"suppressed"`
		WindowStart *int64 `json:"window_start,omitempty"`
		WindowCount int    `json:"window_count"`
	}
	rows := make([]row, len(limits))
	for i, l := range limits {
		rows[i] = row{Webhook: l.Webhook, Event: l.Event, Key: l.Key, SentAt: nullMicroOf(l.SentAt),
			Suppressed: l.Suppressed, WindowStart: nullMicroOf(l.WindowStart), WindowCount: l.WindowCount}
	}
	body, err := json.Marshal(rows)
	if err != nil {
		return errorf("sqlite: save webhook limits: %w", err)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, webhookLimitsSaveSQL, sql.Named("limits", string(body)))
		return err
	})
	if err != nil {
		return errorf("sqlite: save webhook limits: %w", err)
	}
	return nil
}

// WebhookLimitsDue returns up to limit rate limits with suppressed alerts
// that last sent one at or before sentBefore; the write lock of the
// transaction keeps them.
func (s *executor) WebhookLimitsDue(ctx context.Context, sentBefore time.Time, limit int) ([]store.WebhookLimit, error) {
	if limit <= 0 {
		return nil, nil
	}
	var limits []store.WebhookLimit
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		limits, err = queryLimits(ctx, tx, webhookLimitsDueSQL, sql.Named("before", sentBefore.UnixMicro()), sql.Named("limit", limit))
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: due webhook limits: %w", err)
	}
	return limits, nil
}

func queryLimits(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]store.WebhookLimit, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var limits []store.WebhookLimit
	for rows.Next() {
		var (
			l            store.WebhookLimit
			sent, window sql.NullInt64
		)
		if err := rows.Scan(&l.Webhook, &l.Event, &l.Key, &sent, &l.Suppressed, &window, &l.WindowCount); err != nil {
			return nil, err
		}
		l.SentAt, l.WindowStart = fromNullMicro(sent), fromNullMicro(window)
		limits = append(limits, l)
	}
	return limits, rows.Err()
}

// SettingInit stores value under name unless one is stored, and returns
// the stored one.
func (s *executor) SettingInit(ctx context.Context, name, value string) (string, error) {
	if err := job.CheckText("setting", name+value); err != nil {
		return "", err
	}
	var stored string
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, settingInitSQL, sql.Named("name", name), sql.Named("value", value),
			sql.Named("now", s.now())).Scan(&stored)
	})
	if err != nil {
		return "", errorf("sqlite: init setting %s: %w", name, err)
	}
	return stored, nil
}

// SettingGet returns the value stored under name, or job.ErrNotFound.
func (s *executor) SettingGet(ctx context.Context, name string) (string, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return "", errorf("sqlite: get setting %s: %w", name, err)
	}
	var v string
	if err := q.QueryRowContext(ctx, settingGetSQL, sql.Named("name", name)).Scan(&v); err != nil {
		return "", errorf("sqlite: get setting %s: %w", name, notFound(err))
	}
	return v, nil
}
