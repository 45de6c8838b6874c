package job

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"
)

// Unique modes for InsertParams.Unique.
const (
	// UniqueNone: no dedupe beyond IdempotencyKey.
	UniqueNone = ""
	// UniqueActive: a queued or running job with the same (queue, kind,
	// args) is returned instead of creating a new one.
	UniqueActive = "active"
)

// Upper bounds that every store can hold (32-bit integers).
const (
	MaxPriority    = 1<<31 - 1
	MaxMaxAttempts = 1<<31 - 1
)

// DefaultMaxArgsBytes is the default limit on the size of a job's args.
const DefaultMaxArgsBytes = 1 << 20

// InsertParams describes a job to create. Zero values take the defaults.
type InsertParams struct {
	Queue          string          // default "default"
	Kind           string          // required
	Args           json.RawMessage // a JSON object; default {}
	Priority       *int            // lower runs first; default 100; >= 0
	RunAt          time.Time       // zero: now
	MaxAttempts    int             // default 5; >= 1
	LeaseTTL       time.Duration   // default 60s
	LockKey        string
	PartitionKey   string
	IdempotencyKey string
	// IdempotencyFingerprint identifies the request that asked for the
	// job, for IdempotencyKey's rule: an insert whose key names a
	// retained job of another fingerprint is refused
	// (ErrIdempotencyMismatch). Normalize sets it, when a key is given
	// and it is empty, to Fingerprint(p); a service whose job holds parts
	// that vary between two sendings of one request gives its own (the
	// async gateway's requests carry the caller's headers).
	IdempotencyFingerprint string
	Unique                 string // UniqueNone or UniqueActive
	// Requires lists the capabilities a claimer must have all of; Prefers
	// those a claimer should have, which others may do without once the
	// job's prefer window has passed. Both are normalised (sorted, no
	// duplicates, nil when empty); see NormalizeCapabilities.
	Requires []string
	Prefers  []string
	// TraceParent is the W3C traceparent of the submitter's trace, for the
	// job's executions to join it (see ValidTraceParent); "" for none.
	TraceParent string
	// Timeout bounds each attempt's run time at the server (see
	// Job.Timeout); 0 for none (the queue's default, if its pool sets
	// one, applies at the claim); at least 1s.
	Timeout time.Duration
	// Schedule and ScheduledFor name the schedule and the tick that make
	// the job (see Job.Schedule); set by the schedule ticker.
	Schedule     string
	ScheduledFor time.Time
	// CallbackURL is where jobd POSTs the job once it is final; "" for
	// none (see CheckCallbackURL).
	CallbackURL string
}

// Normalize validates p, fills its defaults in place and, for
// UniqueActive, returns the args hash to store. maxArgs <= 0 means
// DefaultMaxArgsBytes. It writes nothing and is called by every store
// before it touches the database, so bad input never half-writes.
func (p *InsertParams) Normalize(maxArgs int) (argsHash string, err error) {
	if maxArgs <= 0 {
		maxArgs = DefaultMaxArgsBytes
	}
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if err := CheckName("queue", p.Queue); err != nil {
		return "", err
	}
	if p.Kind == "" {
		return "", Invalid("kind", "is required")
	}
	if err := CheckName("kind", p.Kind); err != nil {
		return "", err
	}
	if p.Priority == nil {
		d := DefaultPriority
		p.Priority = &d
	} else if *p.Priority < 0 || *p.Priority > MaxPriority {
		return "", Invalid("priority", "must be between 0 and %d, got %d", MaxPriority, *p.Priority)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	} else if p.MaxAttempts < 1 || p.MaxAttempts > MaxMaxAttempts {
		return "", Invalid("max_attempts", "must be between 1 and %d, got %d", MaxMaxAttempts, p.MaxAttempts)
	}
	if p.LeaseTTL == 0 {
		p.LeaseTTL = DefaultLeaseTTL
	} else if p.LeaseTTL < time.Second {
		return "", Invalid("lease_ttl", "must be at least 1s, got %s", p.LeaseTTL)
	}
	if p.Timeout != 0 && p.Timeout < time.Second {
		return "", Invalid("timeout", "must be at least 1s, got %s", p.Timeout)
	}
	if p.Schedule != "" {
		if err := CheckName("schedule", p.Schedule); err != nil {
			return "", err
		}
	}
	if err := checkArgs(&p.Args, maxArgs); err != nil {
		return "", err
	}
	for _, key := range [...]struct{ field, v string }{{"lock_key", p.LockKey}, {"partition_key", p.PartitionKey},
		{"idempotency_key", p.IdempotencyKey}, {"idempotency_fingerprint", p.IdempotencyFingerprint}} {
		if len(key.v) > MaxKeyBytes || CheckText(key.field, key.v) != nil {
			return "", Invalid(key.field, "must be valid UTF-8 of at most %d bytes, without NUL", MaxKeyBytes)
		}
	}
	if p.TraceParent != "" && !ValidTraceParent(p.TraceParent) {
		return "", Invalid("trace_parent", "must be a W3C traceparent of version 00")
	}
	if err := CheckCallbackURL("callback_url", p.CallbackURL); err != nil {
		return "", err
	}
	if p.Requires, err = NormalizeCapabilities("requires", p.Requires); err != nil {
		return "", err
	}
	if p.Prefers, err = NormalizeCapabilities("prefers", p.Prefers); err != nil {
		return "", err
	}
	if p.Unique != UniqueNone && p.Unique != UniqueActive {
		return "", Invalid("unique", "must be %q or empty, got %q", UniqueActive, p.Unique)
	}
	needFingerprint := p.IdempotencyKey != "" && p.IdempotencyFingerprint == ""
	if p.Unique == UniqueNone && !needFingerprint {
		return "", nil // the args need not be decoded: most inserts
	}
	obj, err := decodeObject(p.Args)
	if err != nil {
		return "", Invalid("args", "must be a JSON object")
	}
	if p.Unique == UniqueActive {
		if argsHash, err = ArgsHash(p.Queue, p.Kind, obj); err != nil {
			return "", err
		}
	}
	if needFingerprint {
		if p.IdempotencyFingerprint, err = fingerprint(p, obj); err != nil {
			return "", err
		}
	}
	return argsHash, nil
}

// checkArgs checks args as every store keeps them: a JSON object of at
// most maxArgs bytes ({} when empty), without decoding it.
func checkArgs(args *json.RawMessage, maxArgs int) error {
	if len(*args) > maxArgs {
		return Invalid("args", "is %d bytes, over the limit of %d", len(*args), maxArgs)
	}
	trimmed := bytes.TrimSpace(*args)
	if len(trimmed) == 0 {
		*args = json.RawMessage(`{}`)
		return nil
	}
	if err := CheckJSON("args", *args); err != nil {
		return err
	}
	// One valid JSON value (CheckJSON) that opens with a brace is an
	// object: no need to decode it to know.
	if trimmed[0] != '{' {
		return Invalid("args", "must be a JSON object")
	}
	return nil
}

// RerunArgs checks the args a rerun of j gives it (see Rerun) as
// Normalize checks a submission's (maxArgs <= 0 means
// DefaultMaxArgsBytes), and returns them ({} for empty) with the args
// hash j then stores: the new args' when j was submitted with
// active-duplicate dedupe (j.ArgsHash set), else "". same reports
// whether they are j's args (equal canonical JSON), which makes the
// rerun no change of args at all.
func RerunArgs(j *Job, args json.RawMessage, maxArgs int) (checked json.RawMessage, hash string, same bool, err error) {
	if maxArgs <= 0 {
		maxArgs = DefaultMaxArgsBytes
	}
	if err := checkArgs(&args, maxArgs); err != nil {
		return nil, "", false, err
	}
	obj, err := decodeObject(args)
	if err != nil {
		return nil, "", false, Invalid("args", "must be a JSON object")
	}
	old, err := decodeObject(j.Args)
	if err != nil {
		return nil, "", false, fmt.Errorf("args of job %s: %w", j.ID, err)
	}
	if j.ArgsHash != "" {
		if hash, err = ArgsHash(j.Queue, j.Kind, obj); err != nil {
			return nil, "", false, err
		}
	}
	return args, hash, sameCanonical(obj, old), nil
}

// sameCanonical reports whether two args objects have one canonical JSON.
func sameCanonical(a, b map[string]any) bool {
	var x, y bytes.Buffer
	return writeCanonical(&x, a) == nil && writeCanonical(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

// decodeObject parses a JSON object keeping numbers exact, so that the args
// hash of two different large integers never collides.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if obj == nil || dec.More() {
		return nil, fmt.Errorf("not a single JSON object")
	}
	return obj, nil
}

// CheckName refuses a name (of a queue, a kind, a schedule) that is over
// 128 bytes, not UTF-8 or holds control characters.
func CheckName(field, v string) error {
	if len(v) > 128 || !utf8.ValidString(v) {
		return Invalid(field, "must be valid UTF-8 of at most 128 bytes")
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return Invalid(field, "must not contain control characters")
		}
	}
	return nil
}

// ArgsHash is the hex SHA-256 of the canonical JSON of (queue, kind, args):
// object keys sorted, null members dropped (docs/design.md).
func ArgsHash(queue, kind string, args map[string]any) (string, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, map[string]any{"queue": queue, "kind": kind, "args": args}); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k, val := range t {
			if val != nil {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			buf.Write(kb)
			buf.WriteByte(':')
			if err := writeCanonical(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("canonical json: %w", err)
		}
		buf.Write(b)
	}
	return nil
}
