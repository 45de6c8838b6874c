package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var durableTests = []test{
	{"StepsResumeOnRetry", testStepsResumeOnRetry},
	{"StepFencedAndLimited", testStepFencedAndLimited},
	{"WaitSignalThenSignal", testWaitSignalThenSignal},
	{"SignalKeptUntilWait", testSignalKeptUntilWait},
	{"SignalTimesOut", testSignalTimesOut},
	{"LateSignalKeptForNextWait", testLateSignalKeptForNextWait},
	{"WaitUntil", testWaitUntil},
	{"WaitChildrenNone", testWaitChildrenNone},
	{"CancelWaiting", testCancelWaiting},
}

// step records name with result for the claimed job c.
func (e *env) step(t *testing.T, c *job.Job, name, result string) *store.StepResult {
	t.Helper()
	res, err := e.s.JobStep(t.Context(), leaseOf(c), store.StepParams{Name: name, Result: json.RawMessage(result)})
	if err != nil {
		t.Fatalf("JobStep %q: %v", name, err)
	}
	return res
}

// wait ends c's attempt waiting as w says.
func (e *env) wait(t *testing.T, c *job.Job, w job.WaitRequest) *job.Job {
	t.Helper()
	j, err := e.s.JobWait(t.Context(), leaseOf(c), w)
	if err != nil {
		t.Fatalf("JobWait %+v: %v", w, err)
	}
	return j
}

// A five-step job that fails at its fourth step resumes there: the
// retry's claim carries the three steps it completed, each recorded once.
func testStepsResumeOnRetry(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 3})
	c := e.claimOne(t, job.DefaultQueue)
	if c.Resume != nil {
		t.Fatalf("a first claim resumes from %+v, want nothing", c.Resume)
	}
	for i := 1; i <= 3; i++ {
		if res := e.step(t, c, fmt.Sprintf("s%d", i), fmt.Sprint(i*10)); !res.Recorded || res.Step.Attempt != 1 {
			t.Fatalf("step %d: %+v, want recorded by attempt 1", i, res)
		}
	}
	// A step sent again (its answer lost) is the one recorded first.
	if res := e.step(t, c, "s2", "999"); res.Recorded || string(res.Step.Result) != "20" {
		t.Fatalf("step s2 again: %+v, want the first one, not recorded again", res)
	}
	e.fail(t, c, true, 0)
	c = e.claimOne(t, job.DefaultQueue)
	if c.Attempt != 2 || c.Resume == nil || len(c.Resume.Steps) != 3 {
		t.Fatalf("retry: attempt %d resume %+v, want attempt 2 with 3 steps", c.Attempt, c.Resume)
	}
	for i := 1; i <= 3; i++ {
		st := c.Resume.Steps[fmt.Sprintf("s%d", i)]
		if string(st.Result) != fmt.Sprint(i*10) || st.Attempt != 1 || st.FinishedAt.IsZero() {
			t.Fatalf("step s%d: %+v", i, st)
		}
	}
	e.step(t, c, "s4", "40")
	e.step(t, c, "s5", "50")
	e.succeed(t, c)
	steps, err := e.s.JobSteps(t.Context(), c.ID)
	if err != nil || len(steps) != 5 {
		t.Fatalf("JobSteps: %d, %v; want 5", len(steps), err)
	}
	if steps[3].Name != "s4" || steps[3].Attempt != 2 {
		t.Fatalf("step 4: %+v, want s4 of attempt 2", steps[3])
	}
}

// A step is fenced by the lease, and refused past its limits, naming the
// field, writing nothing.
func testStepFencedAndLimited(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	stale := leaseOf(c)
	stale.Token[0] ^= 1
	if _, err := e.s.JobStep(t.Context(), stale, store.StepParams{Name: "a"}); !errors.Is(err, job.ErrLeaseLost) {
		t.Fatalf("step with a stale token: %v, want ErrLeaseLost", err)
	}
	_, err := e.s.JobStep(t.Context(), leaseOf(c), store.StepParams{Name: "a", Result: json.RawMessage(`"abcdef"`), MaxResult: 4})
	var ve *job.ValidationError
	if !errors.As(err, &ve) || ve.Field != "result" {
		t.Fatalf("a result too large: %v, want a validation error of result", err)
	}
	e.step(t, c, "a", "1")
	_, err = e.s.JobStep(t.Context(), leaseOf(c), store.StepParams{Name: "b", MaxSteps: 1})
	if !errors.As(err, &ve) || ve.Field != "name" {
		t.Fatalf("a step past the limit: %v, want a validation error of name", err)
	}
	if steps, _ := e.s.JobSteps(t.Context(), c.ID); len(steps) != 1 {
		t.Fatalf("%d steps, want 1: the refused ones wrote nothing", len(steps))
	}
	e.succeed(t, c)
	if _, err := e.s.JobStep(t.Context(), leaseOf(c), store.StepParams{Name: "c"}); !errors.Is(err, job.ErrLeaseLost) {
		t.Fatalf("step of a finished job: %v, want ErrLeaseLost", err)
	}
}

// A job waiting for a signal holds no lease and is woken by it; the
// claim that resumes it carries the signal, under the same attempt.
func testWaitSignalThenSignal(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	j := e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "approve"})
	if j.State != job.StateWaiting || j.WaitFor != job.WaitSignal || j.LeaseToken != [16]byte{} || j.Attempt != 0 {
		t.Fatalf("after the wait: %s wait_for %q token %v attempt %d", j.State, j.WaitFor, j.LeaseToken, j.Attempt)
	}
	e.claimNone(t, job.DefaultQueue)
	if _, err := e.s.JobSignal(t.Context(), c.ID, "other", nil); err != nil {
		t.Fatal(err)
	}
	e.claimNone(t, job.DefaultQueue)
	res, err := e.s.JobSignal(t.Context(), c.ID, "approve", json.RawMessage(`{"by":"ann"}`))
	if err != nil || !res.Delivered || res.Job.State != job.StateQueued {
		t.Fatalf("signal: %+v, %v; want delivered, queued", res, err)
	}
	c = e.claimOne(t, job.DefaultQueue)
	if c.Attempt != 1 || c.Resume == nil || c.Resume.Signal == nil || c.Resume.Signal.TimedOut ||
		c.Resume.Signal.Name != "approve" || !jsonEqual(c.Resume.Signal.Payload, json.RawMessage(`{"by":"ann"}`)) {
		t.Fatalf("resumed: attempt %d resume %+v", c.Attempt, c.Resume)
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventWaiting, job.EventWoken, job.EventClaimed)
}

// A signal sent before the job waits is kept, and the wait takes it at
// once.
func testSignalKeptUntilWait(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	res, err := e.s.JobSignal(t.Context(), c.ID, "go", json.RawMessage(`1`))
	if err != nil || res.Delivered {
		t.Fatalf("early signal: %+v, %v; want kept", res, err)
	}
	if res, err := e.s.JobSignal(t.Context(), c.ID, "go", json.RawMessage(`2`)); err != nil || res.Delivered {
		t.Fatalf("second early signal: %+v, %v", res, err)
	}
	if j := e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "go", Timeout: time.Hour}); j.State != job.StateQueued || j.RunAt.After(e.now()) {
		t.Fatalf("wait for a kept signal: %s at %v, want queued now", j.State, j.RunAt)
	}
	c = e.claimOne(t, job.DefaultQueue)
	if s := c.Resume.Signal; s == nil || s.TimedOut || string(s.Payload) != "2" {
		t.Fatalf("resumed with %+v, want the second payload", s)
	}
	e.succeed(t, c)
	if _, err := e.s.JobSignal(t.Context(), c.ID, "go", nil); !errors.Is(err, job.ErrWrongState) {
		t.Fatalf("signal a finished job: %v, want ErrWrongState", err)
	}
}

// A signal wait with a timeout is a delayed job: claimed at the timeout,
// marked timed out, with no reaper; a signal before then wakes it.
func testSignalTimesOut(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	j := e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "s", Timeout: time.Minute})
	if j.State != job.StateQueued || !j.RunAt.Equal(e.now().Add(time.Minute)) {
		t.Fatalf("timed wait: %s at %v", j.State, j.RunAt)
	}
	e.claimNone(t, job.DefaultQueue)
	e.clk.Advance(time.Minute)
	c = e.claimOne(t, job.DefaultQueue)
	if c.Resume == nil || c.Resume.Signal == nil || !c.Resume.Signal.TimedOut || c.Resume.Signal.Name != "s" {
		t.Fatalf("after the timeout: %+v, want the signal timed out", c.Resume)
	}
	// Waiting again: a signal sent now wakes the delayed job at once.
	e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "s", Timeout: time.Hour})
	res, err := e.s.JobSignal(t.Context(), c.ID, "s", json.RawMessage(`"x"`))
	if err != nil || !res.Delivered || res.Job.RunAt.After(e.now()) {
		t.Fatalf("signal in a timed wait: %+v, %v; want delivered, due now", res, err)
	}
	c = e.claimOne(t, job.DefaultQueue)
	if s := c.Resume.Signal; s == nil || s.TimedOut || string(s.Payload) != `"x"` {
		t.Fatalf("resumed with %+v", s)
	}
}

// A signal wakes only a job that waits for it now: one whose timed wait
// for it timed out and that is queued again for another reason (a
// retry's delay, a sleep) is left where it is, the signal kept for its
// next wait, which takes it at once.
func testLateSignalKeptForNextWait(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 3})
	c := e.claimOne(t, job.DefaultQueue)
	e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "s", Timeout: time.Minute})
	e.clk.Advance(time.Minute)
	c = e.claimOne(t, job.DefaultQueue)
	if c.Resume.Signal == nil || !c.Resume.Signal.TimedOut {
		t.Fatalf("after the timeout: %+v, want the signal timed out", c.Resume.Signal)
	}
	e.fail(t, c, true, time.Hour)
	retryAt := e.get(t, c.ID).RunAt
	res, err := e.s.JobSignal(t.Context(), c.ID, "s", json.RawMessage(`"late"`))
	if err != nil || res.Delivered {
		t.Fatalf("signal to a job queued by its retry: %+v, %v; want kept", res, err)
	}
	if j := e.get(t, c.ID); j.State != job.StateQueued || !j.RunAt.Equal(retryAt) {
		t.Fatalf("after the late signal: %s at %v, want queued at the retry's %v", j.State, j.RunAt, retryAt)
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventWaiting, job.EventClaimed, job.EventRetried)
	e.claimNone(t, job.DefaultQueue)
	e.clk.Advance(time.Hour)
	c = e.claimOne(t, job.DefaultQueue)
	if j := e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "s", Timeout: time.Minute}); j.State != job.StateQueued || j.RunAt.After(e.now()) {
		t.Fatalf("next wait with the signal kept: %s at %v, want queued now", j.State, j.RunAt)
	}
	c = e.claimOne(t, job.DefaultQueue)
	if g := c.Resume.Signal; g == nil || g.TimedOut || string(g.Payload) != `"late"` {
		t.Fatalf("resumed with %+v, want the late signal", g)
	}
	// A sleep after a signal wait that timed out: the signal does not
	// end the sleep.
	e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "t", Timeout: time.Minute})
	e.clk.Advance(time.Minute)
	c = e.claimOne(t, job.DefaultQueue)
	until := e.now().Add(time.Hour)
	e.wait(t, c, job.WaitRequest{For: job.WaitUntil, Until: until})
	if res, err := e.s.JobSignal(t.Context(), c.ID, "t", nil); err != nil || res.Delivered {
		t.Fatalf("signal to a sleeping job: %+v, %v; want kept", res, err)
	}
	if j := e.get(t, c.ID); !j.RunAt.Equal(until) {
		t.Fatalf("the sleep ends at %v after the signal, want %v", j.RunAt, until)
	}
}

// A sleep until a time is a delayed job of the same attempt.
func testWaitUntil(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 1})
	c := e.claimOne(t, job.DefaultQueue)
	until := e.now().Add(time.Hour)
	if j := e.wait(t, c, job.WaitRequest{For: job.WaitUntil, Until: until}); j.State != job.StateQueued || !j.RunAt.Equal(until) {
		t.Fatalf("sleep: %s at %v", j.State, j.RunAt)
	}
	e.claimNone(t, job.DefaultQueue)
	e.clk.Advance(time.Hour)
	c = e.claimOne(t, job.DefaultQueue)
	if c.Attempt != 1 {
		t.Fatalf("attempt %d after a sleep, want 1: a wait is not an attempt", c.Attempt)
	}
	e.succeed(t, c)
}

// A wait for children when none is pending queues the job at once.
func testWaitChildrenNone(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	if j := e.wait(t, c, job.WaitRequest{For: job.WaitChildren}); j.State != job.StateQueued {
		t.Fatalf("wait without children: %s, want queued", j.State)
	}
	c = e.claimOne(t, job.DefaultQueue)
	if c.Resume == nil || len(c.Resume.Children) != 0 {
		t.Fatalf("resume %+v, want no children", c.Resume)
	}
}

// The cancel of a waiting job is immediate; a wait of a job whose cancel
// was requested ends it canceled.
func testCancelWaiting(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "s"})
	if j := e.cancel(t, c.ID); j.State != job.StateCanceled || j.WaitFor != "" {
		t.Fatalf("cancel of a waiting job: %s wait_for %q", j.State, j.WaitFor)
	}
	e.insert(t, job.InsertParams{Kind: "k"})
	c = e.claimOne(t, job.DefaultQueue)
	e.cancel(t, c.ID)
	if j := e.wait(t, c, job.WaitRequest{For: job.WaitSignal, Signal: "s"}); j.State != job.StateCanceled {
		t.Fatalf("wait after a cancel request: %s, want canceled", j.State)
	}
}
