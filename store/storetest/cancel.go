package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"jobd/job"
	"jobd/store"
)

var cancelTests = []test{
	{"Queued", testCancelQueued},
	{"Running", testCancelRunning},
	{"Final", testCancelFinal},
	{"Unknown", testCancelUnknown},
}

func testCancelQueued(t *testing.T, e *env) {
	j := e.insert(t, job.InsertParams{Kind: "k"})
	e.clk.Advance(time.Second)
	got := e.cancel(t, j.ID)
	for _, c := range []*job.Job{got, e.get(t, j.ID)} {
		wantState(t, c, job.StateCanceled)
		wantTimePtr(t, "finished_at", c.FinishedAt, e.now())
	}
	e.wantKinds(t, j.ID, job.EventQueued, job.EventCanceled)
	e.claimNone(t, job.DefaultQueue)
}

func testCancelRunning(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	got := e.cancel(t, c.ID)
	for _, j := range []*job.Job{got, e.get(t, c.ID)} {
		wantState(t, j, job.StateRunning)
		if !j.CancelRequested || j.LeaseToken != c.LeaseToken {
			t.Fatalf("canceled running job: cancel_requested %v token %s, want true and the holder's %s", j.CancelRequested, j.LeaseToken, c.LeaseToken)
		}
		wantNil(t, "finished_at", j.FinishedAt)
	}
	canceled, err := e.s.JobSetProgress(t.Context(), leaseOf(c), job.Progress{Done: 1, Total: 2})
	if err != nil || !canceled {
		t.Fatalf("JobSetProgress after cancel: canceled %v err %v, want true, nil", canceled, err)
	}
	res, err := e.s.JobHeartbeat(t.Context(), owner, []store.Lease{leaseOf(c)})
	if err != nil || len(res) != 1 || !res[0].Held || !res[0].CancelRequested {
		t.Fatalf("JobHeartbeat after cancel: %+v %v, want held with cancel requested", res, err)
	}
	e.finishOne(t, store.Outcome{Lease: leaseOf(c), Status: store.OutcomeCanceled})
	wantState(t, e.get(t, c.ID), job.StateCanceled)
	e.claimNone(t, job.DefaultQueue)
}

func testCancelFinal(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	succeeded := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, store.Outcome{Lease: leaseOf(succeeded), Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"ok": true}`)})
	e.insert(t, job.InsertParams{Kind: "k"})
	failed := e.claimOne(t, job.DefaultQueue)
	e.fail(t, failed, false, 0)
	canceled := e.insert(t, job.InsertParams{Kind: "k"})
	e.cancel(t, canceled.ID)

	for _, id := range []uuid.UUID{succeeded.ID, failed.ID, canceled.ID} {
		before := e.get(t, id)
		e.clk.Advance(time.Second)
		_, err := e.s.JobCancel(t.Context(), id)
		wantErr(t, "JobCancel of a "+string(before.State)+" job", err, job.ErrWrongState)
		after := e.get(t, id)
		unchanged(t, before, after)
		if after.CancelRequested {
			t.Fatalf("JobCancel of a %s job set cancel_requested", before.State)
		}
	}
}

func testCancelUnknown(t *testing.T, e *env) {
	_, err := e.s.JobCancel(t.Context(), uuid.Must(uuid.NewV7()))
	wantErr(t, "JobCancel of an unknown job", err, job.ErrNotFound)
}
