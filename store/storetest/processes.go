package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var processTests = []test{
	{"InitCallHistory", testProcessInitCall},
	{"InitTwice", testProcessInitTwice},
	{"Fenced", testProcessFenced},
	{"TimerReplaced", testProcessTimerReplaced},
	{"ErrorCancelsTimer", testProcessErrorCancelsTimer},
	{"Remove", testProcessRemove},
	{"Delete", testProcessDelete},
	{"List", testProcessList},
}

// task inserts and claims a task job of process ns/id.
func (e *env) task(t *testing.T, ns, id string) *job.Job {
	t.Helper()
	e.insert(t, job.InsertParams{Kind: "process.call", LockKey: "process:" + ns + "/" + id, Queue: "proc"})
	return e.claimOne(t, "proc")
}

func (e *env) taskFinish(t *testing.T, r store.ProcessTaskResult) *store.Process {
	t.Helper()
	p, err := e.s.ProcessTaskFinish(context.Background(), r)
	if err != nil {
		t.Fatalf("ProcessTaskFinish: %v", err)
	}
	return p
}

func (e *env) process(t *testing.T, ns, id string, page store.HistoryPage) *store.Process {
	t.Helper()
	p, err := e.s.ProcessGet(context.Background(), ns, id, page)
	if err != nil {
		t.Fatalf("ProcessGet: %v", err)
	}
	return p
}

func raws(ss ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(ss))
	for i, s := range ss {
		out[i] = json.RawMessage(s)
	}
	return out
}

// timerParams is a timer job of ns/id due at at.
func timerParams(ns, id string, at time.Time) *job.InsertParams {
	return &job.InsertParams{Kind: "process.timeout", Queue: "proc", LockKey: "process:" + ns + "/" + id, RunAt: at}
}

func testProcessInitCall(t *testing.T, e *env) {
	j := e.task(t, "ns", "p1")
	p := e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j), Namespace: "ns", ID: "p1", Create: true, Status: store.ProcessRunning,
		Outcome: json.RawMessage(`{"response":1}`), AuxState: json.RawMessage(`{"n":1}`),
		Metadata: json.RawMessage(`{"m":true}`), Events: raws(`{"e":1}`, `{"e":2}`),
	})
	if p.Status != store.ProcessRunning || p.LastEventID != 2 {
		t.Fatalf("after init: %+v", p)
	}
	wantJSON(t, "checkpoint", e.get(t, j.ID).Checkpoint, []byte(`{"response":1}`))
	wantState(t, e.get(t, j.ID), job.StateRunning) // its holder finishes it
	e.succeed(t, e.get(t, j.ID))

	j2 := e.task(t, "ns", "p1")
	e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j2), Namespace: "ns", ID: "p1", Status: store.ProcessRunning,
		Events: raws(`{"e":3}`),
	})
	p = e.process(t, "ns", "p1", store.HistoryPage{After: -1, Limit: 100})
	wantJSON(t, "aux_state kept", p.AuxState, []byte(`{"n":1}`))
	wantJSON(t, "metadata kept", p.Metadata, []byte(`{"m":true}`))
	if len(p.History) != 3 {
		t.Fatalf("history: %d events, want 3", len(p.History))
	}
	for i, ev := range p.History {
		if ev.EventID != int64(i+1) {
			t.Fatalf("event %d has id %d", i, ev.EventID)
		}
	}
	wantJSON(t, "third event", p.History[2].Payload, []byte(`{"e":3}`))
	last := e.process(t, "ns", "p1", store.HistoryPage{After: -1, Limit: 2})
	if len(last.History) != 2 || last.History[0].EventID != 2 {
		t.Fatalf("last 2: %+v", last.History)
	}
	after := e.process(t, "ns", "p1", store.HistoryPage{After: 1, Limit: 1})
	if len(after.History) != 1 || after.History[0].EventID != 2 {
		t.Fatalf("after 1 limit 1: %+v", after.History)
	}
	_, err := e.s.ProcessGet(context.Background(), "ns", "nope", store.HistoryPage{})
	wantErr(t, "unknown process", err, job.ErrNotFound)
}

func testProcessInitTwice(t *testing.T, e *env) {
	j := e.task(t, "ns", "p")
	e.taskFinish(t, store.ProcessTaskResult{Lease: leaseOf(j), Namespace: "ns", ID: "p", Create: true, Status: store.ProcessRunning})
	e.succeed(t, e.get(t, j.ID))
	j2 := e.task(t, "ns", "p")
	_, err := e.s.ProcessTaskFinish(context.Background(), store.ProcessTaskResult{
		Lease: leaseOf(j2), Namespace: "ns", ID: "p", Create: true, Status: store.ProcessRunning, Outcome: json.RawMessage(`1`),
	})
	wantErr(t, "second init", err, job.ErrDuplicate)
	if cp := e.get(t, j2.ID).Checkpoint; len(cp) != 0 {
		t.Fatalf("a refused task left a checkpoint: %s", cp)
	}
	// A call on a process that does not exist.
	j3 := e.task(t, "ns", "other")
	_, err = e.s.ProcessTaskFinish(context.Background(), store.ProcessTaskResult{
		Lease: leaseOf(j3), Namespace: "ns", ID: "other", Status: store.ProcessRunning,
	})
	wantErr(t, "call on no process", err, job.ErrNotFound)
}

func testProcessFenced(t *testing.T, e *env) {
	j := e.task(t, "ns", "p")
	stale := store.Lease{ID: j.ID, Token: uuid.New()}
	_, err := e.s.ProcessTaskFinish(context.Background(), store.ProcessTaskResult{
		Lease: stale, Namespace: "ns", ID: "p", Create: true, Status: store.ProcessRunning,
	})
	wantErr(t, "wrong token", err, job.ErrLeaseLost)
	_, err = e.s.ProcessGet(context.Background(), "ns", "p", store.HistoryPage{})
	wantErr(t, "process after a fenced-off init", err, job.ErrNotFound)
}

func testProcessTimerReplaced(t *testing.T, e *env) {
	j := e.task(t, "ns", "p")
	first := e.now().Add(time.Hour)
	p := e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j), Namespace: "ns", ID: "p", Create: true, Status: store.ProcessRunning,
		SetTimer: timerParams("ns", "p", first),
	})
	if p.TimerJob == uuid.Nil || p.TimerAt == nil {
		t.Fatalf("no timer: %+v", p)
	}
	wantTimePtr(t, "timer_at", p.TimerAt, first)
	old := p.TimerJob
	wantState(t, e.get(t, old), job.StateQueued)
	e.succeed(t, e.get(t, j.ID))

	j2 := e.task(t, "ns", "p")
	p = e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j2), Namespace: "ns", ID: "p", Status: store.ProcessRunning,
		SetTimer: timerParams("ns", "p", first.Add(time.Hour)),
	})
	wantState(t, e.get(t, old), job.StateCanceled)
	e.wantKinds(t, old, job.EventQueued, job.EventCanceled)
	if p.TimerJob == old || p.TimerJob == uuid.Nil {
		t.Fatalf("timer not replaced: %+v", p)
	}
	newer := p.TimerJob
	wantState(t, e.get(t, newer), job.StateQueued)
	e.succeed(t, e.get(t, j2.ID))

	j3 := e.task(t, "ns", "p")
	p = e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j3), Namespace: "ns", ID: "p", Status: store.ProcessRunning, UnsetTimer: true,
	})
	wantState(t, e.get(t, newer), job.StateCanceled)
	if p.TimerJob != uuid.Nil || p.TimerAt != nil {
		t.Fatalf("timer not unset: %+v", p)
	}
}

func testProcessErrorCancelsTimer(t *testing.T, e *env) {
	j := e.task(t, "ns", "p")
	p := e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j), Namespace: "ns", ID: "p", Create: true, Status: store.ProcessRunning,
		SetTimer: timerParams("ns", "p", e.now().Add(time.Hour)),
	})
	timer := p.TimerJob
	e.succeed(t, e.get(t, j.ID))
	j2 := e.task(t, "ns", "p")
	p = e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j2), Namespace: "ns", ID: "p", Status: store.ProcessError, Detail: "boom",
	})
	if p.Status != store.ProcessError || p.Detail != "boom" || p.TimerJob != uuid.Nil {
		t.Fatalf("after error: %+v", p)
	}
	wantState(t, e.get(t, timer), job.StateCanceled)
}

func testProcessRemove(t *testing.T, e *env) {
	j := e.task(t, "ns", "p")
	p := e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j), Namespace: "ns", ID: "p", Create: true, Status: store.ProcessRunning,
		Events: raws(`1`), SetTimer: timerParams("ns", "p", e.now().Add(time.Hour)),
	})
	timer := p.TimerJob
	e.succeed(t, e.get(t, j.ID))
	j2 := e.task(t, "ns", "p")
	if p := e.taskFinish(t, store.ProcessTaskResult{Lease: leaseOf(j2), Namespace: "ns", ID: "p", Remove: true}); p != nil {
		t.Fatalf("removed process returned: %+v", p)
	}
	_, err := e.s.ProcessGet(context.Background(), "ns", "p", store.HistoryPage{})
	wantErr(t, "removed process", err, job.ErrNotFound)
	wantState(t, e.get(t, timer), job.StateCanceled)
	// A new process of the same id starts with an empty history.
	e.succeed(t, e.get(t, j2.ID))
	j3 := e.task(t, "ns", "p")
	p = e.taskFinish(t, store.ProcessTaskResult{Lease: leaseOf(j3), Namespace: "ns", ID: "p", Create: true, Status: store.ProcessRunning, Events: raws(`2`)})
	if p.LastEventID != 1 {
		t.Fatalf("recreated process has last_event_id %d", p.LastEventID)
	}
}

func testProcessDelete(t *testing.T, e *env) {
	j := e.task(t, "ns", "p")
	p := e.taskFinish(t, store.ProcessTaskResult{
		Lease: leaseOf(j), Namespace: "ns", ID: "p", Create: true, Status: store.ProcessRunning,
		Events: raws(`1`), SetTimer: timerParams("ns", "p", e.now().Add(time.Hour)),
	})
	e.succeed(t, e.get(t, j.ID))
	if err := e.s.ProcessDelete(context.Background(), "ns", "p"); err != nil {
		t.Fatalf("ProcessDelete: %v", err)
	}
	wantState(t, e.get(t, p.TimerJob), job.StateCanceled)
	_, err := e.s.ProcessGet(context.Background(), "ns", "p", store.HistoryPage{})
	wantErr(t, "deleted process", err, job.ErrNotFound)
	wantErr(t, "second delete", e.s.ProcessDelete(context.Background(), "ns", "p"), job.ErrNotFound)
}

func testProcessList(t *testing.T, e *env) {
	for _, id := range []string{"a", "b", "c"} {
		j := e.task(t, "ns", id)
		status, detail := store.ProcessRunning, ""
		if id == "b" {
			status, detail = store.ProcessError, "x"
		}
		e.taskFinish(t, store.ProcessTaskResult{Lease: leaseOf(j), Namespace: "ns", ID: id, Create: true, Status: status, Detail: detail})
		e.succeed(t, e.get(t, j.ID))
	}
	ctx := context.Background()
	ps, total, err := e.s.ProcessList(ctx, store.ProcessListParams{Namespace: "ns", Limit: 2})
	if err != nil || total != 3 || len(ps) != 2 || ps[0].ID != "a" || ps[1].ID != "b" {
		t.Fatalf("page 1: %v %d %+v", err, total, ps)
	}
	ps, _, err = e.s.ProcessList(ctx, store.ProcessListParams{Namespace: "ns", Limit: 2, After: "b"})
	if err != nil || len(ps) != 1 || ps[0].ID != "c" {
		t.Fatalf("page 2: %v %+v", err, ps)
	}
	ps, total, err = e.s.ProcessList(ctx, store.ProcessListParams{Namespace: "ns", Status: store.ProcessError, Limit: 10})
	if err != nil || total != 1 || len(ps) != 1 || ps[0].ID != "b" || ps[0].Detail != "x" {
		t.Fatalf("errors: %v %d %+v", err, total, ps)
	}
	_, total, _ = e.s.ProcessList(ctx, store.ProcessListParams{Namespace: "other", Limit: 10})
	if total != 0 {
		t.Fatalf("other namespace: %d", total)
	}
}
