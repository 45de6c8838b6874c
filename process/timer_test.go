package process_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

func get(t *testing.T, st store.Store) *store.Process {
	t.Helper()
	p, err := st.ProcessGet(context.Background(), "c", "p", store.HistoryPage{After: -1, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// otherTimer returns the one timer job of the process that is not first.
func otherTimer(t *testing.T, st store.Store, first uuid.UUID) uuid.UUID {
	t.Helper()
	res, err := st.JobList(context.Background(), store.ListParams{Queue: process.DefaultQueue, Kind: process.KindTimer, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var others []uuid.UUID
	for _, j := range res.Jobs {
		if j.ID != first {
			others = append(others, j.ID)
		}
	}
	if len(others) != 1 {
		t.Fatalf("timer not replaced: first %s, others %v", first, others)
	}
	return others[0]
}

// TestTimerReplaced: a timer set while another is pending replaces it:
// the first is canceled (it never fires), only the later one fires.
func TestTimerReplaced(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		st, r := setup(t, driver)
		run(t, st, r, process.TaskInit, `{}`)
		run(t, st, r, process.TaskCall, `{"timer":3600}`)
		first := get(t, st).TimerJob
		if first == uuid.Nil {
			t.Fatal("no first timer")
		}
		run(t, st, r, process.TaskCall, `{"timer":0.01}`)
		// The second timer may have fired (and been cleared from the
		// process) already: find it among the timer jobs.
		second := otherTimer(t, st, first)
		if j := wait(t, st, first); j.State != job.StateCanceled {
			t.Fatalf("replaced timer: %s", j.State)
		}
		if j := wait(t, st, second); j.State != job.StateSucceeded {
			t.Fatalf("later timer: %s %s", j.State, j.LastError)
		}
		p := get(t, st)
		// Two calls and one timeout (+100): the replaced timer never ran.
		if !jsonEq(p.AuxState, `{"N":102}`) || p.TimerJob != uuid.Nil || p.TimerAt != nil {
			t.Fatalf("after timer: %s, timer %s", p.AuxState, p.TimerJob)
		}
	})
}

// TestTimerDueDuringCall: a timer that falls due while a call runs waits
// for it, then runs once, seeing the call's changes.
func TestTimerDueDuringCall(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		g := &gate{started: make(chan struct{}), release: make(chan struct{})}
		st, r := setupGate(t, driver, g)
		var once sync.Once
		release := func() { once.Do(func() { close(g.release) }) }
		t.Cleanup(release) // before the engine stops, should the test fail
		ctx := context.Background()
		run(t, st, r, process.TaskInit, `{}`)
		// The timer falls due shortly; the slow call is queued before it
		// (its run_at is earlier), so it is claimed first.
		due := time.Now().Add(500 * time.Millisecond).UTC()
		args, _ := json.Marshal(map[string]any{"at": due})
		run(t, st, r, process.TaskCall, string(args))
		timer := get(t, st).TimerJob
		slow, err := r.Submit(ctx, "c", "p", process.TaskCall, json.RawMessage(`{"block":true}`), "")
		if err != nil {
			t.Fatal(err)
		}
		if !slow.RunAt.Before(due) {
			t.Skipf("the slow call was queued after the timer's due time (%s >= %s)", slow.RunAt, due)
		}
		<-g.started
		// Hold the call until the timer is due, then check it waits.
		<-time.After(time.Until(due))
		if j, err := st.JobGet(ctx, timer); err != nil || j.State.Final() || j.State == job.StateRunning {
			t.Fatalf("timer during the call: %v %+v", err, j)
		}
		release()
		if j := wait(t, st, slow.ID); j.State != job.StateSucceeded {
			t.Fatalf("slow call: %s %s", j.State, j.LastError)
		}
		if j := wait(t, st, timer); j.State != job.StateSucceeded || j.Attempt != 1 {
			t.Fatalf("timer: %s attempt %d %s", j.State, j.Attempt, j.LastError)
		}
		p := get(t, st)
		var kinds []string
		for _, e := range p.History {
			var k string
			_ = json.Unmarshal(e.Payload, &k)
			kinds = append(kinds, k)
		}
		if !jsonEq(p.AuxState, `{"N":102}`) || len(kinds) != 4 || kinds[2] != "call" || kinds[3] != "timeout" {
			t.Fatalf("after: aux %s, history %v", p.AuxState, kinds)
		}
	})
}
