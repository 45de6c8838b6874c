package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

var (
	now   = time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)
	delay = 30 * time.Second
)

// runAt names what a transition does to run_at.
type runAt int

const (
	keep     runAt = iota // the row's run_at stays
	atNow                 // now
	afterDly              // now + delay
)

func (r runAt) time() time.Time {
	switch r {
	case atNow:
		return now
	case afterDly:
		return now.Add(delay)
	}
	return time.Time{}
}

// want is a transition as a table row: the fields a test states, the
// others follow from them (finished_at is set exactly for final states).
type want struct {
	state   State
	kind    EventKind
	attempt int // counter after
	runAt   runAt
	// evAttempt is the attempt the journal names.
	evAttempt int
	detail    string
	lastError *string // nil: kept
	result    bool    // the outcome's result is written
}

func str(s string) *string { return &s }

// check compares got with w, for facts f.
func (w want) check(t *testing.T, name string, f Facts, got Transition) {
	t.Helper()
	if got.From != f.State {
		t.Errorf("%s: From %q, want the facts' %q", name, got.From, f.State)
	}
	if got.State != w.state || got.Event.Kind != w.kind || got.Attempt != w.attempt || got.Event.Attempt != w.evAttempt {
		t.Errorf("%s: state %q kind %q attempt %d (journal %d); want %q %q %d (%d)",
			name, got.State, got.Event.Kind, got.Attempt, got.Event.Attempt, w.state, w.kind, w.attempt, w.evAttempt)
	}
	if !got.RunAt.Equal(w.runAt.time()) {
		t.Errorf("%s: run_at %v, want %v", name, got.RunAt, w.runAt.time())
	}
	if final := got.State.Final(); final != (got.FinishedAt != nil) || (final && !got.FinishedAt.Equal(now)) {
		t.Errorf("%s: state %q with finished_at %v", name, got.State, got.FinishedAt)
	}
	if got.Event.Detail != w.detail {
		t.Errorf("%s: journal detail %q, want %q", name, got.Event.Detail, w.detail)
	}
	switch {
	case (got.LastError == nil) != (w.lastError == nil):
		t.Errorf("%s: last_error %v, want %v", name, ptr(got.LastError), ptr(w.lastError))
	case got.LastError != nil && *got.LastError != *w.lastError:
		t.Errorf("%s: last_error %q, want %q", name, *got.LastError, *w.lastError)
	}
	if (got.Result != nil) != w.result {
		t.Errorf("%s: result %s, want written: %v", name, got.Result, w.result)
	}
}

func ptr(s *string) string {
	if s == nil {
		return "<kept>"
	}
	return fmt.Sprintf("%q", *s)
}

// Every outcome, crossed with cancel requested and attempts left.
func TestFinish(t *testing.T) {
	outcomes := map[string]Outcome{
		"succeeded":           {Status: OutcomeSucceeded, Result: json.RawMessage(`{"n":1}`)},
		"failed retryable":    {Status: OutcomeFailed, Error: "boom", Retryable: true, RetryDelay: delay},
		"failed permanent":    {Status: OutcomeFailed, Error: "boom", RetryDelay: delay},
		"canceled":            {Status: OutcomeCanceled, Error: "stopped"},
		"released":            {Status: OutcomeReleased},
		"failed, delay < 0":   {Status: OutcomeFailed, Error: "boom", Retryable: true, RetryDelay: -time.Hour},
		"failed, no message":  {Status: OutcomeFailed, Retryable: false},
		"canceled, no reason": {Status: OutcomeCanceled},
		"throttled":           {Status: OutcomeFailed, Error: "429", Retryable: false, Throttle: delay},
	}
	boom, empty := str("boom"), str("")
	cases := []struct {
		outcome     string
		cancel      bool
		attemptLeft bool
		want        want
	}{
		// Attempt 2 of 3 (attempts left) or 3 of 3 (none left).
		{"succeeded", false, true, want{StateSucceeded, EventSucceeded, 2, keep, 2, "", nil, true}},
		{"succeeded", false, false, want{StateSucceeded, EventSucceeded, 3, keep, 3, "", nil, true}},
		{"succeeded", true, true, want{StateSucceeded, EventSucceeded, 2, keep, 2, "", nil, true}},
		{"succeeded", true, false, want{StateSucceeded, EventSucceeded, 3, keep, 3, "", nil, true}},

		{"failed retryable", false, true, want{StateQueued, EventRetried, 2, afterDly, 2, "boom", boom, false}},
		{"failed retryable", false, false, want{StateFailed, EventFailed, 3, keep, 3, "boom", boom, false}},
		{"failed retryable", true, true, want{StateCanceled, EventCanceled, 2, keep, 2, "boom", boom, false}},
		{"failed retryable", true, false, want{StateCanceled, EventCanceled, 3, keep, 3, "boom", boom, false}},

		{"failed permanent", false, true, want{StateFailed, EventFailed, 2, keep, 2, "boom", boom, false}},
		{"failed permanent", false, false, want{StateFailed, EventFailed, 3, keep, 3, "boom", boom, false}},
		{"failed permanent", true, true, want{StateCanceled, EventCanceled, 2, keep, 2, "boom", boom, false}},
		{"failed permanent", true, false, want{StateCanceled, EventCanceled, 3, keep, 3, "boom", boom, false}},

		{"canceled", false, true, want{StateCanceled, EventCanceled, 2, keep, 2, "stopped", nil, false}},
		{"canceled", false, false, want{StateCanceled, EventCanceled, 3, keep, 3, "stopped", nil, false}},
		{"canceled", true, true, want{StateCanceled, EventCanceled, 2, keep, 2, "stopped", nil, false}},
		{"canceled", true, false, want{StateCanceled, EventCanceled, 3, keep, 3, "stopped", nil, false}},

		// A release gives the attempt back, even the last one; the journal
		// names the attempt that was given back.
		{"released", false, true, want{StateQueued, EventRequeued, 1, atNow, 2, "", nil, false}},
		{"released", false, false, want{StateQueued, EventRequeued, 2, atNow, 3, "", nil, false}},
		{"released", true, true, want{StateCanceled, EventCanceled, 2, keep, 2, "", nil, false}},
		{"released", true, false, want{StateCanceled, EventCanceled, 3, keep, 3, "", nil, false}},

		// A throttle gives the attempt back, even the last one, whether the
		// failure was retryable or not: the downstream refused the work.
		{"throttled", false, true, want{StateQueued, EventThrottled, 1, afterDly, 2, "429", str("429"), false}},
		{"throttled", false, false, want{StateQueued, EventThrottled, 2, afterDly, 3, "429", str("429"), false}},
		{"throttled", true, true, want{StateCanceled, EventCanceled, 2, keep, 2, "429", str("429"), false}},
		{"throttled", true, false, want{StateCanceled, EventCanceled, 3, keep, 3, "429", str("429"), false}},

		{"failed, delay < 0", false, true, want{StateQueued, EventRetried, 2, atNow, 2, "boom", boom, false}},
		{"failed, no message", false, true, want{StateFailed, EventFailed, 2, keep, 2, "", empty, false}},
		{"canceled, no reason", false, true, want{StateCanceled, EventCanceled, 2, keep, 2, "", nil, false}},
	}
	for _, tc := range cases {
		f := Facts{State: StateRunning, Attempt: 2, MaxAttempts: 3, CancelRequested: tc.cancel}
		if !tc.attemptLeft {
			f.Attempt = 3
		}
		name := fmt.Sprintf("%s, cancel requested %v, attempts left %v", tc.outcome, tc.cancel, tc.attemptLeft)
		got, err := Finish(f, outcomes[tc.outcome], now)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !f.CancelRequested && got.CancelRequested {
			t.Errorf("%s: set cancel_requested", name)
		}
		tc.want.check(t, name, f, got)
	}
}

// TestFinishOnlyRunning: the fence lets only running jobs through; a
// transition from elsewhere is refused, as is an unknown outcome.
func TestFinishOnlyRunning(t *testing.T) {
	for _, s := range States {
		if s == StateRunning {
			continue
		}
		_, err := Finish(Facts{State: s, Attempt: 1, MaxAttempts: 3}, Outcome{Status: OutcomeSucceeded}, now)
		if !errors.Is(err, ErrWrongState) {
			t.Errorf("finish a %s job: %v, want ErrWrongState", s, err)
		}
	}
	_, err := Finish(Facts{State: StateRunning, Attempt: 1, MaxAttempts: 3}, Outcome{Status: "done"}, now)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "status" {
		t.Errorf("unknown outcome: %v, want a ValidationError naming status", err)
	}
}

// TestFinishSuccessReadsNothing: a success's transition depends on the row
// only through the attempt it keeps and journals, as the stores' hot path
// (SucceededState, SucceededEvent, attempt from the row) assumes.
func TestFinishSuccessReadsNothing(t *testing.T) {
	result := json.RawMessage(`[1]`)
	for attempt := 1; attempt <= 3; attempt++ {
		for _, cancel := range []bool{false, true} {
			f := Facts{State: StateRunning, Attempt: attempt, MaxAttempts: 2, CancelRequested: cancel}
			got, err := Finish(f, Outcome{Status: OutcomeSucceeded, Result: result, Error: "ignored", Retryable: true}, now)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != SucceededState || got.Event.Kind != SucceededEvent || got.Attempt != attempt ||
				got.Event.Attempt != attempt || got.Event.Detail != "" || got.LastError != nil || string(got.Result) != "[1]" {
				t.Errorf("success with %+v: %+v", f, got)
			}
		}
	}
}

func TestRescue(t *testing.T) {
	expired := str(LeaseExpired)
	cases := []struct {
		cancel, attemptLeft bool
		want                want
	}{
		{false, true, want{StateQueued, EventRescued, 2, atNow, 2, LeaseExpired, nil, false}},
		{false, false, want{StateFailed, EventFailed, 3, keep, 3, LeaseExpired, expired, false}},
		{true, true, want{StateCanceled, EventCanceled, 2, keep, 2, LeaseExpired, nil, false}},
		{true, false, want{StateCanceled, EventCanceled, 3, keep, 3, LeaseExpired, nil, false}},
	}
	for _, tc := range cases {
		f := Facts{State: StateRunning, Attempt: 2, MaxAttempts: 3, CancelRequested: tc.cancel}
		if !tc.attemptLeft {
			f.Attempt = 3
		}
		name := fmt.Sprintf("rescue, cancel requested %v, attempts left %v", tc.cancel, tc.attemptLeft)
		got, err := Rescue(f, now)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tc.want.check(t, name, f, got)
	}
	for _, s := range States {
		if s == StateRunning {
			continue
		}
		if _, err := Rescue(Facts{State: s, Attempt: 1, MaxAttempts: 3}, now); !errors.Is(err, ErrWrongState) {
			t.Errorf("rescue a %s job: %v, want ErrWrongState", s, err)
		}
	}
}

// TestCancel covers every state, with and without a cancel requested
// already, and with and without attempts left (which a cancel ignores).
func TestCancel(t *testing.T) {
	for _, s := range States {
		for _, requested := range []bool{false, true} {
			for _, attempt := range []int{1, 3} {
				f := Facts{State: s, Attempt: attempt, MaxAttempts: 3, CancelRequested: requested}
				name := fmt.Sprintf("cancel a %s job, cancel requested %v, attempt %d of 3", s, requested, attempt)
				got, write, err := Cancel(f, now)
				switch {
				case s == StateQueued || s == StateWaiting:
					if err != nil || !write {
						t.Fatalf("%s: write %v err %v", name, write, err)
					}
					want{StateCanceled, EventCanceled, attempt, keep, attempt, "", nil, false}.check(t, name, f, got)
					if got.RequestsCancel() {
						t.Errorf("%s: notifies a holder", name)
					}
					if (s == StateWaiting) != (got.Task != nil) || got.Task != nil && *got.Task != (TaskChange{}) {
						t.Errorf("%s: task change %+v, want it cleared exactly for a waiting job", name, got.Task)
					}
				case s == StateRunning && !requested:
					if err != nil || !write {
						t.Fatalf("%s: write %v err %v", name, write, err)
					}
					want{StateRunning, EventCancelRequested, attempt, keep, attempt, "", nil, false}.check(t, name, f, got)
					if !got.CancelRequested || !got.RequestsCancel() {
						t.Errorf("%s: cancel_requested %v, notifies %v; want both", name, got.CancelRequested, got.RequestsCancel())
					}
				case s == StateRunning:
					if err != nil || write {
						t.Errorf("%s: write %v err %v; want nothing written, no error", name, write, err)
					}
				default:
					if !errors.Is(err, ErrWrongState) || write {
						t.Errorf("%s: write %v err %v; want ErrWrongState", name, write, err)
					}
				}
			}
		}
	}
}

func TestRetry(t *testing.T) {
	for _, s := range States {
		for _, requested := range []bool{false, true} {
			for _, attempt := range []int{1, 3} {
				f := Facts{State: s, Attempt: attempt, MaxAttempts: 3, CancelRequested: requested}
				name := fmt.Sprintf("retry a %s job, cancel requested %v, attempt %d of 3", s, requested, attempt)
				got, err := Retry(f, now)
				if s != StateFailed && s != StateCanceled {
					if !errors.Is(err, ErrWrongState) {
						t.Errorf("%s: %v, want ErrWrongState", name, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want{StateQueued, EventManualRetry, 0, atNow, 0, "", nil, false}.check(t, name, f, got)
				if got.CancelRequested {
					t.Errorf("%s: cancel request kept", name)
				}
			}
		}
	}
}

func TestOutcomeCheck(t *testing.T) {
	for _, o := range []Outcome{
		{Status: OutcomeSucceeded},
		{Status: OutcomeSucceeded, Result: json.RawMessage(`{"a":1}`)},
		{Status: OutcomeFailed, Error: "x"},
		{Status: OutcomeCanceled},
		{Status: OutcomeReleased},
	} {
		if err := o.Check(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	for field, o := range map[string]Outcome{
		"status": {Status: "done"},
		"result": {Status: OutcomeSucceeded, Result: json.RawMessage(`{`)},
	} {
		var ve *ValidationError
		if err := o.Check(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%+v: %v, want a ValidationError naming %s", o, err, field)
		}
	}
}
