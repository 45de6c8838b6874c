package job

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Fingerprint is the fingerprint of the request p describes, for its
// idempotency key's rule (see InsertParams.IdempotencyFingerprint): the
// hex SHA-256 of the canonical JSON of the members that decide the job,
// read from p once Normalize has filled its defaults, so that two
// requests that only spell the same job differently have one
// fingerprint. Those members are the queue, the kind, the args (in the
// canonical form of ArgsHash: object keys sorted, null members dropped),
// the priority, max_attempts, lease_ttl and timeout (an omitted one is
// its default), run_at when one is given (an omitted run_at, "now", is
// not the same as any given one; a given one is compared to the
// microsecond, in UTC), the lock, partition and unique rules, requires
// and prefers (sorted) and the callback URL. The key itself, the
// traceparent (each sending of a request may carry its own trace) and
// the schedule and tick that jobd sets are not among them. p must be
// normalised.
func Fingerprint(p *InsertParams) (string, error) {
	obj, err := decodeObject(p.Args)
	if err != nil {
		return "", fmt.Errorf("fingerprint: args: %w", err)
	}
	return fingerprint(p, obj)
}

// fingerprint is Fingerprint of p, whose args decode to args.
func fingerprint(p *InsertParams, args map[string]any) (string, error) {
	m := map[string]any{
		"queue": p.Queue, "kind": p.Kind, "args": args,
		"max_attempts": p.MaxAttempts, "lease_ttl": p.LeaseTTL.Nanoseconds(),
		"lock_key": p.LockKey, "partition_key": p.PartitionKey, "unique": p.Unique,
		"requires": stringsAny(p.Requires), "prefers": stringsAny(p.Prefers),
		"callback_url": p.CallbackURL,
	}
	if p.Priority != nil {
		m["priority"] = *p.Priority
	}
	if p.Timeout != 0 {
		m["timeout"] = p.Timeout.Nanoseconds()
	}
	if !p.RunAt.IsZero() {
		m["run_at"] = p.RunAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, m); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// stringsAny is names as the []any canonical JSON writes.
func stringsAny(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}
