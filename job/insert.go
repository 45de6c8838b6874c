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
	Unique         string // UniqueNone or UniqueActive
	// Requires lists the capabilities a claimer must have all of; Prefers
	// those a claimer should have, which others may do without once the
	// job's prefer window has passed. Both are normalised (sorted, no
	// duplicates, nil when empty); see NormalizeCapabilities.
	Requires []string
	Prefers  []string
	// TraceParent is the W3C traceparent of the submitter's trace, for the
	// job's executions to join it (see ValidTraceParent); "" for none.
	TraceParent string
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
	if err := checkName("queue", p.Queue); err != nil {
		return "", err
	}
	if p.Kind == "" {
		return "", Invalid("kind", "is required")
	}
	if err := checkName("kind", p.Kind); err != nil {
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
	if len(p.Args) > maxArgs {
		return "", Invalid("args", "is %d bytes, over the limit of %d", len(p.Args), maxArgs)
	}
	if len(bytes.TrimSpace(p.Args)) == 0 {
		p.Args = json.RawMessage(`{}`)
	}
	if err := CheckJSON("args", p.Args); err != nil {
		return "", err
	}
	obj, err := decodeObject(p.Args)
	if err != nil {
		return "", Invalid("args", "must be a JSON object")
	}
	for field, v := range map[string]string{"lock_key": p.LockKey, "partition_key": p.PartitionKey, "idempotency_key": p.IdempotencyKey} {
		if len(v) > MaxKeyBytes || CheckText(field, v) != nil {
			return "", Invalid(field, "must be valid UTF-8 of at most %d bytes, without NUL", MaxKeyBytes)
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
	switch p.Unique {
	case UniqueNone:
		return "", nil
	case UniqueActive:
		return ArgsHash(p.Queue, p.Kind, obj)
	default:
		return "", Invalid("unique", "must be %q or empty, got %q", UniqueActive, p.Unique)
	}
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

func checkName(field, v string) error {
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
// object keys sorted, null members dropped (DESIGN.md section 2).
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
