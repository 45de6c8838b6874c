package engine

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jobd/jobd/job"
)

// Backoff kinds.
const (
	// BackoffExponential waits Base × 2^(attempt-1), capped at Max, spread
	// by ±Jitter.
	BackoffExponential = "exponential"
	// BackoffLinear waits Step × attempt, capped at Max, spread by ±Jitter
	// (the dataloader's 30 s × attempt).
	BackoffLinear = "linear"
)

// DefaultBackoff is the policy of a queue that sets none.
var DefaultBackoff = Backoff{Kind: BackoffExponential, Base: time.Second, Max: time.Hour, Jitter: 0.2}

// defaultStep is a linear policy's Step when it sets none.
const defaultStep = 30 * time.Second

// Backoff is a retry-delay policy. In JSON, durations are Go duration
// strings: {"kind":"exponential","base":"1s","max":"1h","jitter":0.2} (the
// default) or {"kind":"linear","step":"30s"}. The zero Backoff is
// DefaultBackoff; otherwise a zero Base, Max or Step takes DefaultBackoff's
// value (Step: 30s), and Jitter 0 means no spread. In JSON an absent
// jitter means DefaultBackoff's 0.2.
type Backoff struct {
	// Kind is BackoffExponential (when empty) or BackoffLinear.
	Kind string
	// Base is the first delay of an exponential policy.
	Base time.Duration
	// Step is the delay per attempt of a linear policy.
	Step time.Duration
	// Max caps the delay.
	Max time.Duration
	// Jitter spreads each delay uniformly over ±Jitter of it, 0 to 1.
	Jitter float64
}

func (b Backoff) normalized() Backoff {
	if b == (Backoff{}) {
		return DefaultBackoff
	}
	if b.Kind == "" {
		b.Kind = BackoffExponential
	}
	if b.Kind == BackoffExponential && b.Base == 0 {
		b.Base = DefaultBackoff.Base
	}
	if b.Kind == BackoffLinear && b.Step == 0 {
		b.Step = defaultStep
	}
	if b.Max == 0 {
		b.Max = DefaultBackoff.Max
	}
	return b
}

func (b Backoff) validate(field string) error {
	switch b.Kind {
	case "", BackoffExponential, BackoffLinear:
	default:
		return job.Invalid(field+".kind", "must be %q or %q, got %q", BackoffExponential, BackoffLinear, b.Kind)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"base", b.Base}, {"step", b.Step}, {"max", b.Max}} {
		if d.v < 0 {
			return job.Invalid(field+"."+d.name, "must not be negative, got %s", d.v)
		}
	}
	if !(b.Jitter >= 0 && b.Jitter <= 1) {
		return job.Invalid(field+".jitter", "must be between 0 and 1, got %v", b.Jitter)
	}
	return nil
}

// Delay returns how long a job waits after its attempt-th attempt (1 for
// the first) failed. rnd supplies the jitter; nil uses the global source.
func (b Backoff) Delay(attempt int, rnd *rand.Rand) time.Duration {
	b = b.normalized()
	if attempt < 1 {
		attempt = 1
	}
	var d time.Duration
	switch b.Kind {
	case BackoffLinear:
		if int64(attempt) > int64(b.Max/b.Step) {
			d = b.Max
		} else {
			d = b.Step * time.Duration(attempt)
		}
	default:
		d = b.Base
		for i := 1; i < attempt && d < b.Max; i++ {
			if d > math.MaxInt64/2 {
				d = b.Max
				break
			}
			d *= 2
		}
		d = min(d, b.Max)
	}
	if b.Jitter > 0 {
		f := 0.0
		if rnd != nil {
			f = rnd.Float64()
		} else {
			f = rand.Float64()
		}
		d = time.Duration(float64(d) * (1 + b.Jitter*(2*f-1)))
	}
	return max(d, 0)
}

// backoffJSON is Backoff's JSON form.
type backoffJSON struct {
	Kind   string   `json:"kind,omitempty"`
	Base   string   `json:"base,omitempty"`
	Step   string   `json:"step,omitempty"`
	Max    string   `json:"max,omitempty"`
	Jitter *float64 `json:"jitter,omitempty"`
}

// MarshalJSON writes durations as Go duration strings.
func (b Backoff) MarshalJSON() ([]byte, error) {
	if b == (Backoff{}) {
		b = DefaultBackoff
	}
	v := backoffJSON{Kind: b.Kind, Jitter: &b.Jitter}
	for _, f := range []struct {
		dst *string
		d   time.Duration
	}{{&v.Base, b.Base}, {&v.Step, b.Step}, {&v.Max, b.Max}} {
		if f.d != 0 {
			*f.dst = f.d.String()
		}
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads durations as Go duration strings ("90s", "5m").
// Errors are *job.ValidationError naming the field ("backoff.base").
func (b *Backoff) UnmarshalJSON(data []byte) error {
	var v backoffJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return job.Invalid("backoff", "must be an object like {\"kind\":\"exponential\",\"base\":\"1s\"}: %v", err)
	}
	out := Backoff{Kind: v.Kind, Jitter: DefaultBackoff.Jitter}
	if out.Kind == "" {
		out.Kind = BackoffExponential
	}
	if v.Jitter != nil {
		out.Jitter = *v.Jitter
	}
	for _, f := range []struct {
		name string
		s    string
		dst  *time.Duration
	}{{"base", v.Base, &out.Base}, {"step", v.Step, &out.Step}, {"max", v.Max, &out.Max}} {
		if f.s == "" {
			continue
		}
		d, err := time.ParseDuration(f.s)
		if err != nil {
			return job.Invalid("backoff."+f.name, "must be a Go duration like \"30s\", got %q", f.s)
		}
		*f.dst = d
	}
	if err := out.validate("backoff"); err != nil {
		return err
	}
	*b = out
	return nil
}
