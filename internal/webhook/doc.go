// Package webhook delivers jobd's webhooks: operators' alerts and
// callers' completion callbacks, each delivery a job of the engine, signed
// per the Standard Webhooks specification.
//
// Where events come from. The store records, in the transaction of each
// transition, the events webhooks report (store.WebhookStore's outbox): a
// job with a callback URL made final, a job failed for good, a job
// rescued, a worker marked offline. The dispatcher, a maintenance duty of
// every node, takes them from the outbox and, in the same transaction,
// turns them into deliveries: a callback becomes one delivery; an alert
// one per matching subscription, unless its rate limit holds it back.
// Level alerts (queue.backlog) are found by the maintenance leader from
// the queue health snapshot. So an event committed is never lost, never
// delivered twice by two nodes, and a crash between its transition and its
// delivery loses nothing.
//
// Delivery. Each delivery is a job of kind Kind in queue Queue, worked by
// the engine of every node: it POSTs the payload (api.WebhookPayload)
// with the webhook-id (the delivery job's id, the same on every attempt),
// webhook-timestamp and webhook-signature headers. A 2xx answer delivers
// it; a connection error, a timeout, 408, 429 or 5xx is retried with the
// queue's backoff (honouring Retry-After), up to Config.MaxAttempts; any
// other answer fails it at once. Its attempts, errors and outcome are
// those of any job (GET /api/v1/jobs/{id}).
//
// Safety. A callback URL is the caller's: its deliveries connect only to
// public addresses (see Guard), checked at connect time, so that neither
// a redirect nor a DNS answer that changes can lead into the operator's
// network, unless Config.AllowPrivate or Config.AllowNetworks say
// otherwise. Subscriptions are the operator's and may point anywhere.
// Secrets are never logged, and the API never shows a subscription's
// secret after its creation.
//
// Rate limits. Each alert type is limited per subscription and key (the
// queue; for failure.pattern, the queue and kind; none for
// worker.offline): at most one alert per Config.AlertInterval, the next
// one counting those suppressed meanwhile; when none comes, the
// dispatcher sends one that only reports the count once the interval has
// passed. The limits live in the store, locked by whoever decides, so
// that nodes and a change of leader never send twice what one node would
// have suppressed.
package webhook
