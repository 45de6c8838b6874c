package api

import (
	"encoding/json"
	"time"
)

// The types of the events jobd delivers by webhook. Operators subscribe
// to alerts (WebhookRequest.Events); a job's callback is always of type
// EventJobFinished; a test delivery is EventPing.
const (
	// EventJobFailed: a job failed for good (out of attempts, failed
	// permanently, or its lease expired on its last attempt).
	EventJobFailed = "job.failed"
	// EventJobRescued: a running job's lease expired and it was put back
	// in its queue.
	EventJobRescued = "job.rescued"
	// EventJobTimedOut: a job's attempt passed its deadline (its
	// timeout): it was put back in its queue, or failed for good when it
	// had no attempt left (then job.failed is sent too).
	EventJobTimedOut = "job.timed_out"
	// EventFailurePattern: several jobs of one queue and kind failed for
	// good within the server's failure window.
	EventFailurePattern = "failure.pattern"
	// EventWorkerOffline: a remote worker was marked offline.
	EventWorkerOffline = "worker.offline"
	// EventQueueBacklog: the oldest due job of a queue has waited longer
	// than the server's backlog threshold.
	EventQueueBacklog = "queue.backlog"
	// EventPing is a test delivery (POST /api/v1/webhooks/{id}/test).
	EventPing = "ping"
	// EventJobFinished is a job's completion callback: the job reached a
	// final state.
	EventJobFinished = "job.finished"
)

// AlertEvents are the alert types a subscription may list.
var AlertEvents = []string{EventJobFailed, EventJobRescued, EventJobTimedOut, EventFailurePattern, EventWorkerOffline, EventQueueBacklog, EventWorkflowFinished}

// The headers of every delivery, per the Standard Webhooks specification
// (https://www.standardwebhooks.com): the delivery's id (the same on every
// attempt of one delivery), the attempt's time in unix seconds, and
// "v1," followed by the base64 HMAC-SHA256 of "id.timestamp.body" under
// the secret's key (the base64 part of its "whsec_" form, decoded).
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// WebhookFilter restricts a subscription to the alerts of one queue
// and/or kind; empty members match any.
type WebhookFilter struct {
	Queue string `json:"queue,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// WebhookRequest is the body of POST /api/v1/webhooks and PUT
// /api/v1/webhooks/{id}.
type WebhookRequest struct {
	// URL receives the deliveries (http:// or https://).
	URL string `json:"url"`
	// Events are alert types (AlertEvents); at least one.
	Events []string `json:"events"`
	// Secret signs the deliveries, in the "whsec_<base64>" form (24 to 64
	// bytes of key). On POST, absent means a new one is made and shown
	// once in the answer; on PUT, absent keeps the current one.
	Secret string        `json:"secret,omitempty"`
	Filter WebhookFilter `json:"filter"`
}

// Webhook is an operator's subscription to alerts. Its secret is never
// shown but in the answer that created it (WebhookCreated).
type Webhook struct {
	ID     string        `json:"id"`
	URL    string        `json:"url"`
	Events []string      `json:"events"`
	Filter WebhookFilter `json:"filter"`
	// SecretSet is always true: every subscription signs its deliveries.
	SecretSet bool `json:"secret_set"`
	// Config marks a subscription jobd serve --webhooks owns: the API
	// cannot change or delete it.
	Config    bool      `json:"config"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// WebhookCreated is the answer of POST /api/v1/webhooks: the subscription
// and its secret, shown this once.
type WebhookCreated struct {
	Webhook
	Secret string `json:"secret"`
}

// WebhookList is the answer of GET /api/v1/webhooks, oldest first.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// WebhookTest is the answer of POST /api/v1/webhooks/{id}/test: the
// delivery job of the ping, whose id is the webhook-id it is sent with.
type WebhookTest struct {
	DeliveryID string `json:"delivery_id"`
}

// WebhookPayload is the body of every delivery: the event's type, when it
// happened, and its data (AlertData for an alert, a Job for a callback,
// WorkflowFinishedData for workflow.finished, PingData for a ping).
type WebhookPayload struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// AlertData is the data of an alert. Which members are set depends on its
// type; Suppressed counts the alerts of the same type and key (its queue,
// or for failure.pattern its queue and kind) that the rate limit held
// back since the last one sent. An alert that only reports what was
// suppressed (none came after the rate limit's interval) has Suppressed
// and the key, and no Job or Worker.
type AlertData struct {
	Queue string `json:"queue,omitempty"`
	Kind  string `json:"kind,omitempty"`
	// Job is the job of job.failed, job.rescued and job.timed_out.
	Job *AlertJob `json:"job,omitempty"`
	// Worker is the worker of worker.offline.
	Worker *AlertWorker `json:"worker,omitempty"`
	// Failures, within Window, of failure.pattern.
	Failures      int      `json:"failures,omitempty"`
	Window        Duration `json:"window,omitempty"`
	WindowSeconds float64  `json:"window_seconds,omitempty"`
	// OldestAvailableAt, its age and the Threshold it passed, of
	// queue.backlog.
	OldestAvailableAt  *time.Time `json:"oldest_available_at,omitempty"`
	OldestAvailableAge Duration   `json:"oldest_available_age,omitempty"`
	Threshold          Duration   `json:"threshold,omitempty"`
	// The members ending in _seconds are the durations in seconds.
	OldestAvailableAgeSeconds float64 `json:"oldest_available_age_seconds,omitempty"`
	ThresholdSeconds          float64 `json:"threshold_seconds,omitempty"`
	Suppressed                int     `json:"suppressed"`
}

// AlertJob is the job an alert is about, as its transition left it.
type AlertJob struct {
	ID          string `json:"id"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	Error       string `json:"error,omitempty"`
}

// AlertWorker is the remote worker an alert is about.
type AlertWorker struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// PingData is the data of a ping.
type PingData struct {
	WebhookID string `json:"webhook_id"`
}
