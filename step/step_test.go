package step

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// memory is a Recorder in memory.
type memory struct {
	steps map[string]json.RawMessage
	fail  error
}

func (m *memory) Lookup(name string) (json.RawMessage, bool) {
	raw, ok := m.steps[name]
	return raw, ok
}

func (m *memory) Record(_ context.Context, name string, result json.RawMessage, _ time.Time) error {
	if m.fail != nil {
		return m.fail
	}
	m.steps[name] = result
	return nil
}

// TestRun: a step runs once and is returned recorded after; an error
// records nothing; a failed record fails the step; outside a handler it
// fails with ErrNoHandler.
func TestRun(t *testing.T) {
	m := &memory{steps: map[string]json.RawMessage{}}
	ctx := WithRecorder(t.Context(), m)
	calls := 0
	fn := func(context.Context) (int, error) { calls++; return 42, nil }
	for range 3 {
		v, err := Run(ctx, "answer", fn)
		if err != nil || v != 42 {
			t.Fatalf("Run: %d, %v", v, err)
		}
	}
	if calls != 1 {
		t.Fatalf("fn ran %d times, want once", calls)
	}
	boom := errors.New("boom")
	if _, err := Run(ctx, "bad", func(context.Context) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing step: %v", err)
	}
	if _, ok := m.steps["bad"]; ok {
		t.Fatal("a failing step was recorded")
	}
	m.fail = errors.New("lease lost")
	if _, err := Run(ctx, "late", fn); err == nil {
		t.Fatal("a step whose record failed succeeded")
	}
	if _, err := Run(t.Context(), "x", fn); !errors.Is(err, ErrNoHandler) {
		t.Fatalf("outside a handler: %v", err)
	}
}

// TestAsWait finds a wait however wrapped.
func TestAsWait(t *testing.T) {
	err := errors.Join(errors.New("x"), WaitForSignal("go", time.Minute))
	if w := AsWait(err); w == nil || w.For != ForSignal || w.Signal != "go" || w.Timeout != time.Minute {
		t.Fatalf("AsWait: %+v", w)
	}
	if AsWait(errors.New("plain")) != nil {
		t.Fatal("a plain error is a wait")
	}
}
