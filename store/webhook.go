package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// WebhookStore holds the webhook subscriptions, the outbox of the events
// the stores record for them, the alerts' rate limits and the server's
// settings (package webhook reads them).
//
// The outbox. A transition that makes a job of a callback URL final
// (JobFinish, JobRescue, JobCancel) records a WebhookCallback event, and
// one that fails a job for good or rescues it a WebhookJobFailed or
// WebhookJobRescued event, in the transaction that applies it; so does
// WorkerMarkOffline for each worker it marks (WebhookWorkerOffline).
// Nothing else writes it: an event exists exactly when its transition
// committed. WebhookEventsTake hands each event out once, in the
// transaction of its caller, which turns it into deliveries: a crash
// between the two loses nothing and sends nothing twice.
type WebhookStore interface {
	// WebhookCreate stores a subscription; job.ErrDuplicate when its id
	// is taken.
	WebhookCreate(ctx context.Context, w Webhook) error
	// WebhookGet returns one subscription, or job.ErrNotFound.
	WebhookGet(ctx context.Context, id string) (*Webhook, error)
	// WebhookList returns every subscription, oldest first.
	WebhookList(ctx context.Context) ([]Webhook, error)
	// WebhookUpdate replaces a subscription's URL, events, filter and
	// Config, and its secret when w.Secret is not empty, sets its
	// updated_at to now and returns it; job.ErrNotFound when there is
	// none.
	WebhookUpdate(ctx context.Context, w Webhook) (*Webhook, error)
	// WebhookDelete deletes a subscription and its rate limits, in one
	// transaction; job.ErrNotFound when there is none. Its deliveries
	// still queued fail when they find it gone.
	WebhookDelete(ctx context.Context, id string) error

	// WebhookEventsTake deletes up to limit events of the outbox, oldest
	// first, and returns them. On PostgreSQL, events another transaction
	// is taking are skipped (concurrent takers never get the same event).
	// Call it in the transaction (InTx) that records what the events
	// became: if it rolls back, the events are there again.
	WebhookEventsTake(ctx context.Context, limit int) ([]WebhookEvent, error)

	// WebhookLimitsLock returns the rate limits of keys, in key order
	// (Webhook, Event, Key) without duplicates, creating those that do not
	// exist yet (nothing sent, nothing suppressed), and locks them until
	// the transaction ends: call it in the transaction (InTx) that decides
	// and saves them (WebhookLimitsSave), so that two deciders, on any
	// node, never decide from the same state.
	WebhookLimitsLock(ctx context.Context, keys []WebhookLimitKey) ([]WebhookLimit, error)
	// WebhookLimitsSave writes rate limits (every field but the key).
	WebhookLimitsSave(ctx context.Context, limits []WebhookLimit) error
	// WebhookLimitsDue returns, locked like WebhookLimitsLock, up to limit
	// rate limits that suppressed alerts (Suppressed > 0) and last sent
	// one at or before sentBefore, oldest sent first. On PostgreSQL, limits
	// another transaction holds are skipped.
	WebhookLimitsDue(ctx context.Context, sentBefore time.Time, limit int) ([]WebhookLimit, error)

	// SettingInit stores value under name unless a value is stored there
	// already, and returns the one stored: of concurrent callers, on any
	// node, the first to commit wins and all get its value.
	SettingInit(ctx context.Context, name, value string) (string, error)
	// SettingGet returns the value stored under name, or job.ErrNotFound.
	SettingGet(ctx context.Context, name string) (string, error)
}

// The outbox's event types.
const (
	// WebhookCallback: a job with a callback URL became final.
	WebhookCallback = "callback"
	// WebhookJobFailed: a job failed for good (out of attempts, failed
	// permanently, or its lease expired on its last attempt).
	WebhookJobFailed = "job.failed"
	// WebhookJobRescued: a job's lease expired and the reaper put it back
	// in its queue.
	WebhookJobRescued = "job.rescued"
	// WebhookJobTimedOut: a job's attempt passed its deadline (its
	// timeout); back to the queue, or, when the event's FinishedAt is set,
	// failed for good.
	WebhookJobTimedOut = "job.timed_out"
	// WebhookWorkerOffline: a remote worker was marked offline.
	WebhookWorkerOffline = "worker.offline"
	// WebhookWorkflowFinished: a workflow ended (its last task became
	// final): the event's Workflow fields say which and how.
	WebhookWorkflowFinished = "workflow.finished"
)

// AlertOf is the outbox event a transition records, decided here for
// every driver: WebhookJobTimedOut for an attempt that passed its
// deadline (retried or failed; a failure's event has FinishedAt set),
// WebhookJobFailed for any other transition to failed, WebhookJobRescued
// for a rescue back to the queue, "" for any other.
func AlertOf(t job.Transition) string {
	switch {
	case t.Event.Kind == job.EventTimedOut && (t.State == job.StateQueued || t.State == job.StateFailed):
		return WebhookJobTimedOut
	case t.State == job.StateFailed:
		return WebhookJobFailed
	case t.State == job.StateQueued && t.Event.Kind == job.EventRescued:
		return WebhookJobRescued
	}
	return ""
}

// Webhook is an operator's subscription to alerts.
type Webhook struct {
	ID  string
	URL string
	// Events are the alert types it receives.
	Events []string
	// Secret signs its deliveries (the whsec_ form). Never shown after
	// creation.
	Secret string
	// Queue and Kind, when not empty, restrict it to the alerts of that
	// queue and kind.
	Queue, Kind string
	// Config marks a subscription owned by the server's configuration
	// (jobd serve --webhooks), which the API may not change.
	Config    bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// WebhookEvent is one event of the outbox.
type WebhookEvent struct {
	// ID orders the events: later events have greater ids.
	ID   int64
	Type string
	// At is when its transition happened.
	At time.Time

	// The job of a job event: its queue, kind, attempt and max attempts
	// and its last error, as the transition left them.
	JobID       uuid.UUID
	Queue, Kind string
	Attempt     int
	MaxAttempts int
	Error       string
	// FinishedAt is the finished_at of a callback's job: the final
	// version of the job the callback reports.
	FinishedAt *time.Time
	// URL is a callback's URL.
	URL string

	// The worker of a worker event.
	WorkerID, WorkerName string

	// The workflow of a workflow event: its id, its name and the state it
	// ended in (FinishedAt is when).
	WorkflowID    uuid.UUID
	WorkflowName  string
	WorkflowState job.WorkflowState
}

// WebhookLimitKey names one rate limit: a subscription, an alert type and
// a key within it (a queue, say).
type WebhookLimitKey struct {
	Webhook, Event, Key string
}

// Less orders keys by Webhook, Event, then Key.
func (k WebhookLimitKey) Less(o WebhookLimitKey) bool {
	if k.Webhook != o.Webhook {
		return k.Webhook < o.Webhook
	}
	if k.Event != o.Event {
		return k.Event < o.Event
	}
	return k.Key < o.Key
}

// WebhookLimit is the state of one rate limit.
type WebhookLimit struct {
	WebhookLimitKey
	// SentAt is when its last alert was sent; nil before the first.
	SentAt *time.Time
	// Suppressed counts the alerts suppressed since.
	Suppressed int
	// WindowStart and WindowCount count events in a window (the failures
	// of a failure pattern): since WindowStart, WindowCount of them.
	WindowStart *time.Time
	WindowCount int
}
