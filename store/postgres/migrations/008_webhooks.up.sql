-- 008: webhooks. A job's callback URL; the operators' subscriptions to
-- alerts; the outbox of the events the transitions record for them; the
-- alerts' rate limits; the server's settings (the callback secret).

-- NULL for none; adding a nullable column without a default rewrites
-- nothing, and it is in no index: a job without a callback pays nothing.
ALTER TABLE jobd_jobs ADD COLUMN callback_url text;

-- An operator's subscription. The secret signs its deliveries; it is
-- needed in clear to sign, and the API never shows it after creation.
-- queue and kind filter its alerts (NULL: any). config marks the
-- subscriptions jobd serve --webhooks owns.
CREATE TABLE jobd_webhooks (
    id         text PRIMARY KEY,
    url        text NOT NULL,
    events     text[] NOT NULL,
    secret     text NOT NULL,
    queue      text,
    kind       text,
    config     boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);

-- The outbox: events a transition recorded in its own transaction, for
-- the dispatcher to turn into deliveries (and delete) in one transaction
-- of its own. Rows are few and short-lived.
CREATE TABLE jobd_webhook_events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    type         text NOT NULL,
    at           timestamptz NOT NULL,
    job_id       uuid,
    queue        text,
    kind         text,
    attempt      integer,
    max_attempts integer,
    error        text,
    finished_at  timestamptz,
    url          text,
    worker_id    text,
    worker_name  text
) WITH (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);

-- One rate limit per subscription, alert type and key (a queue).
CREATE TABLE jobd_webhook_limits (
    webhook_id   text NOT NULL,
    event        text NOT NULL,
    key          text NOT NULL,
    sent_at      timestamptz,
    suppressed   integer NOT NULL DEFAULT 0,
    window_start timestamptz,
    window_count integer NOT NULL DEFAULT 0,
    PRIMARY KEY (webhook_id, event, key)
);

-- The limits whose suppressed alerts are still to be told.
CREATE INDEX jobd_webhook_limits_due ON jobd_webhook_limits (sent_at)
    WHERE suppressed > 0;

-- Settings of the server, by name.
CREATE TABLE jobd_settings (
    name       text PRIMARY KEY,
    value      text NOT NULL,
    created_at timestamptz NOT NULL
);
