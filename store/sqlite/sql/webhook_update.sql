-- Replaces a subscription's url, events, filter and config, and its
-- secret unless :secret is ''. No row when there is none.
UPDATE jobd_webhooks SET
    url = :url,
    events = :events,
    secret = coalesce(nullif(:secret, ''), secret),
    queue = nullif(:queue, ''),
    kind = nullif(:kind, ''),
    config = :config,
    updated_at = :now
WHERE id = :id
RETURNING id, url, events, secret, coalesce(queue, ''), coalesce(kind, ''), config, created_at, updated_at
