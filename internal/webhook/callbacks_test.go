package webhook_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/job"
)

// TestCallbackToLoopbackRefused: by default a callback to 127.0.0.1 is
// refused at connect time: its delivery fails at once, saying why, and
// the receiver gets nothing.
func TestCallbackToLoopbackRefused(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, db database) {
		rcv := newReceiver(t)
		n := startNode(t, db, options{})
		j := n.submit(t, job.InsertParams{Kind: "ok", CallbackURL: rcv.URL + "/done?token=s3cret"})
		n.untilJob(t, j.ID, "the job to succeed", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		var d *job.Job
		n.st.Until(t, "the callback's delivery to fail", func() bool {
			ds := n.deliveries(t)
			if len(ds) == 1 && ds[0].State == job.StateFailed {
				d = ds[0]
				return true
			}
			return false
		})
		if d.Attempt != 1 || !strings.Contains(d.LastError, "127.0.0.1 is a loopback address") ||
			!strings.Contains(d.LastError, webhook.ErrForbiddenAddress.Error()) {
			t.Fatalf("delivery: attempt %d, error %q; want one attempt refused for the loopback address", d.Attempt, d.LastError)
		}
		if strings.Contains(d.LastError, "s3cret") {
			t.Fatalf("the delivery's error shows the callback URL's query: %q", d.LastError)
		}
		select {
		case got := <-rcv.got:
			t.Fatalf("the receiver got %s", describe(got))
		default:
		}
	})
}

// TestCallbackDelivered: with private addresses allowed, a job's
// callback carries the final job, signed with the callback secret; a
// retried job calls it again, with a delivery of its own.
func TestCallbackDelivered(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, db database) {
		rcv := newReceiver(t)
		n := startNode(t, db, options{guard: webhook.Guard{AllowPrivate: true}})
		j := n.submit(t, job.InsertParams{Kind: "fail", CallbackURL: rcv.URL + "/done", MaxAttempts: 1})
		got := rcv.next(t, "the callback")
		verify(t, callbackSecret, got)
		if got.Payload.Type != api.EventJobFinished {
			t.Fatalf("callback type %q, want %q", got.Payload.Type, api.EventJobFinished)
		}
		var final api.Job
		if err := json.Unmarshal(got.Payload.Data, &final); err != nil {
			t.Fatal(err)
		}
		if final.ID != j.ID || final.State != api.StateFailed || final.Error != "boom" || final.CallbackURL != rcv.URL+"/done" ||
			final.FinishedAt == nil || !got.Payload.Timestamp.Equal(*final.FinishedAt) {
			t.Fatalf("callback job = %+v", final)
		}

		if _, err := n.st.JobRetry(t.Context(), j.ID); err != nil {
			t.Fatal(err)
		}
		again := rcv.next(t, "the callback of the retried job")
		verify(t, callbackSecret, again)
		if again.ID == got.ID {
			t.Fatalf("the retried job's callback reuses webhook-id %s", got.ID)
		}
		var second api.Job
		if err := json.Unmarshal(again.Payload.Data, &second); err != nil {
			t.Fatal(err)
		}
		if second.ID != j.ID || second.FinishedAt == nil || !second.FinishedAt.After(*final.FinishedAt) {
			t.Fatalf("second callback job = %+v", second)
		}
	})
}

// TestRestartMidRetry: a delivery whose receiver is down when its node
// stops is delivered by the next node on the same database, with the
// same webhook-id.
func TestRestartMidRetry(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, db database) {
		rcv := newReceiver(t)
		rcv.answering(func(int) int { return http.StatusServiceUnavailable })
		// Attempts enough that the first node never runs out of them.
		o := options{guard: webhook.Guard{AllowPrivate: true}, maxAttempts: 1000}
		first := startNode(t, db, o)
		j := first.submit(t, job.InsertParams{Kind: "ok", CallbackURL: rcv.URL})
		failed := rcv.next(t, "a first attempt")
		first.stop()
		rcv.answering(func(int) int { return http.StatusOK })

		second := startNode(t, db, o)
		got := rcv.next(t, "the delivery after the restart")
		for got.Status != http.StatusOK { // an attempt of the first node's
			got = rcv.next(t, "the delivery after the restart")
		}
		verify(t, callbackSecret, got)
		if got.ID != failed.ID || got.Status != http.StatusOK {
			t.Fatalf("after the restart: webhook-id %s answered %d; want %s answered 200", got.ID, got.Status, failed.ID)
		}
		var final api.Job
		if err := json.Unmarshal(got.Payload.Data, &final); err != nil || final.ID != j.ID {
			t.Fatalf("delivered %s (%v), want job %s", got.Payload.Data, err, j.ID)
		}
		ds := second.deliveries(t)
		if len(ds) != 1 {
			t.Fatalf("%d deliveries, want 1", len(ds))
		}
		second.untilJob(t, ds[0].ID, "the delivery to succeed", func(j *job.Job) bool { return j.State == job.StateSucceeded })
	})
}
