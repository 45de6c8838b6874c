package webhook_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestAlertEvents: each alert type fires, with its documented payload and
// a signature an independent check verifies.
func TestAlertEvents(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, db database) {
		rcv := newReceiver(t)
		n := startNode(t, db, options{failureCount: 2, backlogAge: time.Millisecond})
		sub, secret := n.subscribe(t, rcv.URL+"/ops?token=t0ken", api.AlertEvents, api.WebhookFilter{})
		var others []request

		// ping, through the same durable path.
		pingID, err := n.svc.Test(t.Context(), sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := rcv.nextOf(t, api.EventPing, &others)
		verify(t, secret, got)
		if got.ID != pingID.String() {
			t.Fatalf("ping webhook-id %s, want its delivery job's id %s", got.ID, pingID)
		}

		// job.failed, twice for one queue and kind: failure.pattern (2 in
		// its window); the second job.failed is rate limited.
		first := n.submit(t, job.InsertParams{Kind: "fail", MaxAttempts: 3})
		got = rcv.nextOf(t, api.EventJobFailed, &others)
		verify(t, secret, got)
		d := alertData(t, got)
		if d.Queue != "work" || d.Kind != "fail" || d.Job == nil || d.Job.ID != first.ID.String() ||
			d.Job.Attempt != 1 || d.Job.MaxAttempts != 3 || d.Job.Error != "boom" || d.Suppressed != 0 {
			t.Fatalf("job.failed data = %s", got.Payload.Data)
		}
		n.submit(t, job.InsertParams{Kind: "fail"})
		got = rcv.nextOf(t, api.EventFailurePattern, &others)
		verify(t, secret, got)
		if d := alertData(t, got); d.Queue != "work" || d.Kind != "fail" || d.Failures != 2 ||
			d.Window != api.Duration(webhook.DefaultFailureWindow) || d.Job != nil {
			t.Fatalf("failure.pattern data = %s", got.Payload.Data)
		}

		// job.rescued: a job claimed by a holder that vanished.
		n.submit(t, job.InsertParams{Kind: "ok", Queue: "orphans", LeaseTTL: time.Second})
		claimed, err := n.st.JobClaim(t.Context(), store.ClaimParams{Queue: "orphans", Max: 1, Owner: "vanished"})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v, %d jobs", err, len(claimed))
		}
		got = rcv.nextOf(t, api.EventJobRescued, &others)
		verify(t, secret, got)
		if d := alertData(t, got); d.Queue != "orphans" || d.Kind != "ok" || d.Job == nil ||
			d.Job.ID != claimed[0].ID.String() || d.Job.Attempt != 1 || d.Job.Error != "" {
			t.Fatalf("job.rescued data = %s", got.Payload.Data)
		}

		// job.timed_out: an attempt past its deadline (1s), put back in
		// its queue.
		slow := n.submit(t, job.InsertParams{Kind: "block", Queue: "work", Timeout: time.Second, MaxAttempts: 2})
		got = rcv.nextOf(t, api.EventJobTimedOut, &others)
		verify(t, secret, got)
		if d := alertData(t, got); d.Queue != "work" || d.Kind != "block" || d.Job == nil || d.Job.ID != slow.ID.String() ||
			d.Job.Attempt != 1 || d.Job.MaxAttempts != 2 || d.Job.Error != "timed out after 1s" {
			t.Fatalf("job.timed_out data = %s", got.Payload.Data)
		}

		// worker.offline: the sweep marks a silent worker offline.
		h := sha256.Sum256([]byte("k"))
		if err := n.st.WorkerCreate(t.Context(), store.Worker{ID: "w1", Name: "gpu-1"},
			store.APIKey{ID: "kw1", Name: "w1", Prefix: "pw1", Hash: h[:], Scopes: []string{"worker"}, WorkerID: "w1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := n.st.WorkerMarkOffline(t.Context(), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got = rcv.nextOf(t, api.EventWorkerOffline, &others)
		verify(t, secret, got)
		if d := alertData(t, got); d.Worker == nil || d.Worker.ID != "w1" || d.Worker.Name != "gpu-1" {
			t.Fatalf("worker.offline data = %s", got.Payload.Data)
		}

		// queue.backlog: a due job nobody works.
		n.submit(t, job.InsertParams{Kind: "ok", Queue: "stuck"})
		got = rcv.nextOf(t, api.EventQueueBacklog, &others)
		for alertData(t, got).Queue != "stuck" { // the deliveries' own queue, a millisecond late
			got = rcv.nextOf(t, api.EventQueueBacklog, &others)
		}
		verify(t, secret, got)
		if d := alertData(t, got); d.Queue != "stuck" || d.OldestAvailableAt == nil || d.OldestAvailableAge <= 0 ||
			d.Threshold != api.Duration(time.Millisecond) {
			t.Fatalf("queue.backlog data = %s", got.Payload.Data)
		}
		if got.Payload.Timestamp.IsZero() {
			t.Fatalf("a payload without its timestamp: %s", got.Body)
		}
	})
}

// TestRetriesKeepTheID: a receiver that answers 500 three times, then
// 200, gets the same webhook-id four times and nothing more.
func TestRetriesKeepTheID(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, db database) {
		rcv := newReceiver(t)
		rcv.answering(func(n int) int {
			if n <= 3 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		n := startNode(t, db, options{})
		sub, secret := n.subscribe(t, rcv.URL, []string{api.EventJobFailed}, api.WebhookFilter{})
		id, err := n.svc.Test(t.Context(), sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		var bodies []string
		for i := range 4 {
			got := rcv.next(t, "an attempt")
			verify(t, secret, got)
			if got.ID != id.String() {
				t.Fatalf("attempt %d: webhook-id %s, want %s every time", i+1, got.ID, id)
			}
			bodies = append(bodies, string(got.Body))
		}
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Fatalf("the body changed between attempts:\n%s\n%s", bodies[0], b)
			}
		}
		j := n.untilJob(t, id, "the delivery to succeed", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		if j.Attempt != 4 || j.LastError == "" {
			t.Fatalf("delivery job: attempt %d, last error %q; want 4 attempts, the last failure kept", j.Attempt, j.LastError)
		}
		if ds := n.deliveries(t); len(ds) != 1 {
			t.Fatalf("%d delivery jobs, want 1", len(ds))
		}
		select {
		case extra := <-rcv.got:
			t.Fatalf("a fifth delivery: %s", describe(extra))
		default:
		}
	})
}

// TestRateLimit: alerts of one type and queue beyond one per interval are
// suppressed and counted; the count goes out with the next alert, or on
// its own once the interval has passed.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, db database) {
		rcv := newReceiver(t)
		clk := clock.NewFake(time.Now())
		n := startNode(t, db, options{clock: clk, alertInterval: time.Minute, failureCount: 1000})
		sub, secret := n.subscribe(t, rcv.URL, []string{api.EventJobFailed}, api.WebhookFilter{})
		limit := func() store.WebhookLimit {
			var got []store.WebhookLimit
			err := n.st.InTx(context.Background(), func(ctx context.Context, ex store.Executor) error {
				var err error
				got, err = ex.WebhookLimitsLock(ctx, []store.WebhookLimitKey{{Webhook: sub.ID, Event: api.EventJobFailed, Key: "work"}})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			return got[0]
		}
		waitSuppressed := func(want int) {
			t.Helper()
			testsignal.Of(&n.svc.Points().Dispatched).WaitFor(t, "a dispatch that suppressed the alerts", func(int) bool { return limit().Suppressed == want })
		}

		for range 3 {
			n.submit(t, job.InsertParams{Kind: "fail"})
		}
		got := rcv.next(t, "the first job.failed")
		verify(t, secret, got)
		if d := alertData(t, got); d.Suppressed != 0 || d.Job == nil {
			t.Fatalf("first alert: %s", got.Payload.Data)
		}
		waitSuppressed(2)

		// No alert comes: after the interval the count goes out alone.
		clk.Advance(time.Minute)
		got = rcv.next(t, "the count of the suppressed alerts")
		verify(t, secret, got)
		if d := alertData(t, got); got.Payload.Type != api.EventJobFailed || d.Suppressed != 2 || d.Job != nil || d.Queue != "work" {
			t.Fatalf("count alert: %s %s", got.Payload.Type, got.Payload.Data)
		}

		// One more within the interval is suppressed; after the interval,
		// the next alert carries the count (or, when the dispatcher's pass
		// comes first, the count goes out alone and that alert is held
		// back): either way the next delivery tells it.
		n.submit(t, job.InsertParams{Kind: "fail"})
		waitSuppressed(1)
		clk.Advance(time.Minute)
		n.submit(t, job.InsertParams{Kind: "fail"})
		got = rcv.next(t, "the alert after the interval")
		verify(t, secret, got)
		if d := alertData(t, got); d.Suppressed != 1 {
			t.Fatalf("the alert after the interval: %s, want suppressed 1", got.Payload.Data)
		}
	})
}
