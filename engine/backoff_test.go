package engine

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestBackoffDelayExponential(t *testing.T) {
	t.Parallel()
	b := Backoff{Base: time.Second, Max: time.Minute}
	for attempt, want := range map[int]time.Duration{
		0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second,
		6: 32 * time.Second, 7: time.Minute, 100: time.Minute, 1 << 30: time.Minute,
	} {
		if got := b.Delay(attempt, nil); got != want {
			t.Errorf("Delay(%d) = %s, want %s", attempt, got, want)
		}
	}
	huge := Backoff{Base: time.Hour, Max: time.Duration(1<<63 - 1)}
	if got := huge.Delay(200, nil); got != huge.Max {
		t.Errorf("Delay(200) with no real cap = %s, want the cap", got)
	}
}

func TestBackoffDelayLinear(t *testing.T) {
	t.Parallel()
	b := Backoff{Kind: BackoffLinear, Step: 30 * time.Second}
	for attempt, want := range map[int]time.Duration{1: 30 * time.Second, 4: 2 * time.Minute, 1000: time.Hour} {
		if got := b.Delay(attempt, nil); got != want {
			t.Errorf("Delay(%d) = %s, want %s", attempt, got, want)
		}
	}
}

func TestBackoffJitterStaysInItsBand(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := Backoff{}.Delay(3, rnd) // default: 4s ± 20%
		if d < 3200*time.Millisecond || d > 4800*time.Millisecond {
			t.Fatalf("Delay(3) = %s, outside 4s ± 20%%", d)
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct delays in 1000: no jitter?", len(seen))
	}
}

func TestBackoffJSON(t *testing.T) {
	t.Parallel()
	var b Backoff
	if err := json.Unmarshal([]byte(`{"kind":"exponential","base":"2s","max":"90s","jitter":0}`), &b); err != nil {
		t.Fatal(err)
	}
	if want := (Backoff{Kind: BackoffExponential, Base: 2 * time.Second, Max: 90 * time.Second}); b != want {
		t.Errorf("got %+v, want %+v", b, want)
	}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"base":"2s"`) || !strings.Contains(string(raw), `"max":"1m30s"`) {
		t.Errorf("Marshal = %s, want durations as strings", raw)
	}
	var back Backoff
	if err := json.Unmarshal(raw, &back); err != nil || back != b {
		t.Errorf("round trip = %+v, %v; want %+v", back, err, b)
	}
	// The zero value means the default, in JSON too.
	raw, _ = json.Marshal(Backoff{})
	if err := json.Unmarshal(raw, &back); err != nil || back != DefaultBackoff {
		t.Errorf("zero round trip via %s = %+v, %v; want the default", raw, back, err)
	}
	if err := json.Unmarshal([]byte(`{}`), &back); err != nil || back.normalized() != DefaultBackoff {
		t.Errorf("{} = %+v, %v; want the default", back, err)
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	if got := truncate("short", 10); got != "short" {
		t.Errorf("truncate short = %q", got)
	}
	long := strings.Repeat("é", 3000) // 6000 bytes
	got := truncate(long, maxErrorBytes)
	if len(got) > maxErrorBytes || !strings.HasSuffix(got, "…") || !utf8Valid(got) {
		t.Errorf("truncate long: %d bytes, suffix %q", len(got), got[len(got)-5:])
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
