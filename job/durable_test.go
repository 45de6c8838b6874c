package job

import (
	"errors"
	"testing"
	"time"
)

// TestWait holds Wait to its table: where each wait takes a running job,
// with its attempt given back, and a cancel request winning.
func TestWait(t *testing.T) {
	running := Facts{State: StateRunning, Attempt: 2, MaxAttempts: 3, AttemptedAt: &now, LeaseOwner: "n1"}
	hour := now.Add(time.Hour)
	cases := []struct {
		name    string
		w       WaitRequest
		wf      WaitFacts
		state   State
		kind    EventKind
		runAt   time.Time
		waitFor WaitFor
		pending int
	}{
		{"children pending", WaitRequest{For: WaitChildren}, WaitFacts{PendingChildren: 3}, StateWaiting, EventWaiting, time.Time{}, WaitChildren, 3},
		{"children final", WaitRequest{For: WaitChildren}, WaitFacts{}, StateQueued, EventWoken, now, "", 0},
		{"signal", WaitRequest{For: WaitSignal, Signal: "approve"}, WaitFacts{}, StateWaiting, EventWaiting, time.Time{}, WaitSignal, 0},
		{"signal kept", WaitRequest{For: WaitSignal, Signal: "approve"}, WaitFacts{SignalKept: true}, StateQueued, EventWoken, now, "", 0},
		{"signal timed", WaitRequest{For: WaitSignal, Signal: "approve", Timeout: time.Hour}, WaitFacts{}, StateQueued, EventWaiting, hour, "", 0},
		{"until later", WaitRequest{For: WaitUntil, Until: hour}, WaitFacts{}, StateQueued, EventWaiting, hour, "", 0},
		{"until passed", WaitRequest{For: WaitUntil, Until: now.Add(-time.Second)}, WaitFacts{}, StateQueued, EventWoken, now, "", 0},
	}
	for _, c := range cases {
		if err := c.w.Check(); err != nil {
			t.Fatalf("%s: Check: %v", c.name, err)
		}
		got, err := Wait(running, c.w, c.wf, now)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.State != c.state || got.Event.Kind != c.kind || !got.RunAt.Equal(c.runAt) {
			t.Errorf("%s: %s %s at %v, want %s %s at %v", c.name, got.State, got.Event.Kind, got.RunAt, c.state, c.kind, c.runAt)
		}
		if got.Attempt != 1 || got.Event.Attempt != 2 {
			t.Errorf("%s: attempt %d (journal %d), want 1 (2): a wait is not an attempt", c.name, got.Attempt, got.Event.Attempt)
		}
		if got.Task == nil || got.Task.WaitFor != c.waitFor || got.Task.Pending != c.pending {
			t.Errorf("%s: task change %+v, want wait_for %q pending %d", c.name, got.Task, c.waitFor, c.pending)
		}
		if got.FinishedAt != nil || got.AttemptedAt != nil || len(got.Events) != 2 || got.Events[0].Kind != EventClaimed {
			t.Errorf("%s: finished %v attempted %v events %+v: want the claim stored, then the wait's entry", c.name, got.FinishedAt, got.AttemptedAt, got.Events)
		}
	}
	// A cancel request wins over every wait.
	asked := running
	asked.CancelRequested = true
	got, err := Wait(asked, WaitRequest{For: WaitChildren}, WaitFacts{PendingChildren: 1}, now)
	if err != nil || got.State != StateCanceled || got.Attempt != 2 || got.Task == nil || got.Task.WaitFor != "" {
		t.Errorf("cancel requested: %+v, %v; want canceled, attempt 2, no wait", got, err)
	}
	if _, err := Wait(Facts{State: StateQueued}, WaitRequest{For: WaitChildren}, WaitFacts{}, now); !errors.Is(err, ErrWrongState) {
		t.Errorf("wait in a queued job: %v, want ErrWrongState", err)
	}
}

// TestWaitRequestCheck names the field of every bad wait.
func TestWaitRequestCheck(t *testing.T) {
	for w, field := range map[*WaitRequest]string{
		{For: "forever"}:  "for",
		{For: WaitSignal}: "signal",
		{For: WaitSignal, Signal: "a", Timeout: -1}: "timeout",
		{For: WaitUntil}:                                              "until",
		{For: WaitChildren, Signal: "a"}:                              "signal",
		{For: WaitSignal, Signal: "a\x00"}:                            "signal",
		{For: WaitSignal, Signal: "a", Timeout: 400 * 24 * time.Hour}: "timeout",
	} {
		var ve *ValidationError
		if err := w.Check(); !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%+v: %v, want a validation error of %q", *w, err, field)
		}
	}
}

// TestWakeAndChildrenEnded: a waiting job is woken once its last child
// ends, counted down before; a job not waiting for children is left
// alone; a timed signal wait (queued) is woken at once by its signal.
func TestWakeAndChildrenEnded(t *testing.T) {
	waiting := Facts{State: StateWaiting, WaitFor: WaitChildren, Attempt: 1, MaxAttempts: 3}
	got, write, err := ChildrenEnded(waiting, 2, now)
	if err != nil || !write || got.State != StateWaiting || got.Task.Pending != 2 || got.Task.WaitFor != WaitChildren || len(got.Events) != 0 {
		t.Errorf("two pending: %+v %v %v", got, write, err)
	}
	got, write, err = ChildrenEnded(waiting, 0, now)
	if err != nil || !write || got.State != StateQueued || !got.RunAt.Equal(now) || got.Event.Kind != EventWoken || got.Task.WaitFor != "" || got.Attempt != 1 {
		t.Errorf("none pending: %+v %v %v", got, write, err)
	}
	for _, f := range []Facts{{State: StateRunning}, {State: StateWaiting, WaitFor: WaitSignal}, {State: StateCanceled}} {
		if _, write, err := ChildrenEnded(f, 0, now); write || err != nil {
			t.Errorf("%+v: write %v %v, want left alone", f, write, err)
		}
	}
	got, err = Wake(Facts{State: StateQueued, Attempt: 1}, `signal "a"`, now)
	if err != nil || got.State != StateQueued || !got.RunAt.Equal(now) || got.Event.Kind != EventWoken {
		t.Errorf("timed wait woken: %+v %v", got, err)
	}
	if _, err := Wake(Facts{State: StateRunning}, "", now); !errors.Is(err, ErrWrongState) {
		t.Errorf("wake a running job: %v", err)
	}
}

// TestInTimedSignalWait: a queued job is in a timed wait for a signal
// only while the entry of that wait is the last its journal stores.
func TestInTimedSignalWait(t *testing.T) {
	running := Facts{State: StateRunning, Attempt: 1, MaxAttempts: 3}
	timed, err := Wait(running, WaitRequest{For: WaitSignal, Signal: "go", Timeout: time.Minute}, WaitFacts{}, now)
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := Wait(running, WaitRequest{For: WaitUntil, Until: now.Add(time.Hour)}, WaitFacts{}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		last Event
		want bool
	}{
		{"the timed wait's entry", timed.Event, true},
		{"a sleep's entry", sleep.Event, false},
		{"a retry's entry", Event{Kind: EventRetried}, false},
		{"no entry", Event{}, false},
	} {
		if got := InTimedSignalWait(c.last, "go"); got != c.want {
			t.Errorf("%s (%+v): %v, want %v", c.name, c.last, got, c.want)
		}
	}
	if InTimedSignalWait(timed.Event, "g") || InTimedSignalWait(timed.Event, "other") {
		t.Errorf("the wait for %q read as a wait for another signal", "go")
	}
}
