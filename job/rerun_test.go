package job

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestRerun: a rerun of a finished job queues it afresh, counts itself,
// keeps the state it leaves as the previous one and journals
// "rerun-requested" after the entries the row implied.
func TestRerun(t *testing.T) {
	for _, from := range []State{StateSucceeded, StateFailed, StateCanceled} {
		fin := at(2)
		f := Facts{State: from, Attempt: 3, MaxAttempts: 5, FinishedAt: &fin, Rerun: 1, CancelRequested: from == StateCanceled}
		tr, write, err := Rerun(f, now, nil, "", true)
		if err != nil || !write {
			t.Fatalf("rerun of a %s job: write %v, %v", from, write, err)
		}
		if tr.State != StateQueued || !tr.RunAt.Equal(now) || tr.Attempt != 0 || tr.CancelRequested || tr.FinishedAt != nil {
			t.Errorf("rerun of a %s job: %+v", from, tr)
		}
		if tr.Rerun == nil || tr.Rerun.Count != 2 || tr.Rerun.PreviousState != from || tr.Rerun.Args != nil {
			t.Errorf("rerun of a %s job: change %+v, want count 2, previous %s, args kept", from, tr.Rerun, from)
		}
		last := tr.Events[len(tr.Events)-1]
		if last.Kind != EventRerunRequested || last.Detail != "rerun 2" || last.Attempt != 0 || !last.At.Equal(now) {
			t.Errorf("rerun of a %s job: entry %+v", from, last)
		}
		if from == StateSucceeded && (len(tr.Events) != 2 || tr.Events[0].Kind != EventSucceeded) {
			t.Errorf("rerun of a succeeded job stores %+v, want its success first", tr.Events)
		}
	}
	fin := at(2)
	f := Facts{State: StateSucceeded, Attempt: 1, MaxAttempts: 5, FinishedAt: &fin}
	tr, _, _ := Rerun(f, now, json.RawMessage(`{"v":2}`), "h", false)
	if string(tr.Rerun.Args) != `{"v":2}` || tr.Rerun.ArgsHash != "h" || tr.Event.Detail != "rerun 1 with new args" {
		t.Errorf("rerun with new args: %+v %q", tr.Rerun, tr.Event.Detail)
	}
}

// TestRerunOfActiveJob: a job queued or running because of a rerun is
// re-run already (no write) unless other args are asked for; any other
// active job cannot be re-run.
func TestRerunOfActiveJob(t *testing.T) {
	for _, st := range []State{StateQueued, StateRunning} {
		_, write, err := Rerun(Facts{State: st, Rerun: 1}, now, nil, "", true)
		if write || err != nil {
			t.Errorf("rerun of a re-run %s job: write %v, %v; want nothing, no error", st, write, err)
		}
		if _, _, err := Rerun(Facts{State: st, Rerun: 1}, now, json.RawMessage(`{}`), "", false); !errors.Is(err, ErrWrongState) {
			t.Errorf("rerun with other args of a re-run %s job: %v, want ErrWrongState", st, err)
		}
		if _, _, err := Rerun(Facts{State: st}, now, nil, "", true); !errors.Is(err, ErrWrongState) {
			t.Errorf("rerun of a %s job never re-run: %v, want ErrWrongState", st, err)
		}
	}
}

// TestTimeOut: an attempt past its deadline goes back to the queue after
// the delay while attempts are left, else fails; journaled "timed-out"
// either way with its reason as the last error; a cancel request wins.
func TestTimeOut(t *testing.T) {
	claimed := at(1)
	for _, c := range []struct {
		name string
		f    Facts
		want want
	}{
		{"attempts left", Facts{State: StateRunning, Attempt: 1, MaxAttempts: 3, Timeout: time.Minute, AttemptedAt: &claimed},
			want{state: StateQueued, kind: EventTimedOut, attempt: 1, runAt: afterDly, evAttempt: 1,
				detail: "timed out after 1m0s", lastError: str("timed out after 1m0s")}},
		{"attempts used", Facts{State: StateRunning, Attempt: 3, MaxAttempts: 3, Timeout: time.Minute, AttemptedAt: &claimed},
			want{state: StateFailed, kind: EventTimedOut, attempt: 3, evAttempt: 3,
				detail: "timed out after 1m0s", lastError: str("timed out after 1m0s")}},
		{"queue's default", Facts{State: StateRunning, Attempt: 1, MaxAttempts: 3},
			want{state: StateQueued, kind: EventTimedOut, attempt: 1, runAt: afterDly, evAttempt: 1,
				detail: "timed out: the attempt passed its deadline", lastError: str("timed out: the attempt passed its deadline")}},
		{"cancel requested", Facts{State: StateRunning, Attempt: 1, MaxAttempts: 3, Timeout: time.Minute, CancelRequested: true},
			want{state: StateCanceled, kind: EventCanceled, attempt: 1, evAttempt: 1,
				detail: "timed out after 1m0s", lastError: str("timed out after 1m0s")}},
	} {
		got, err := TimeOut(c.f, now, delay)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		c.want.check(t, c.name, c.f, got)
	}
	if _, err := TimeOut(Facts{State: StateQueued}, now, delay); !errors.Is(err, ErrWrongState) {
		t.Fatalf("time-out of a queued job: %v", err)
	}
}
