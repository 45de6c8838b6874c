package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var webhookTests = []test{
	{"Subscriptions", testWebhookSubscriptions},
	{"CallbackOnSuccess", testWebhookCallbackOnSuccess},
	{"CallbackOnFailureAndRetry", testWebhookCallbackOnFailureAndRetry},
	{"CallbackOnCancel", testWebhookCallbackOnCancel},
	{"RescueEvents", testWebhookRescueEvents},
	{"TimeoutEvents", testWebhookTimeoutEvents},
	{"WorkerOffline", testWebhookWorkerOffline},
	{"TakeRollsBack", testWebhookTakeRollsBack},
	{"TakeConcurrent", testWebhookTakeConcurrent},
	{"Limits", testWebhookLimits},
	{"LimitsConcurrent", testWebhookLimitsConcurrent},
	{"Settings", testWebhookSettings},
	{"PruneEvents", testWebhookPruneEvents},
}

// outbox takes every event of the outbox, in one call, and requires the
// outbox to be empty afterwards.
func (e *env) outbox(t *testing.T) []store.WebhookEvent {
	t.Helper()
	events, err := e.s.WebhookEventsTake(t.Context(), 1000)
	if err != nil {
		t.Fatalf("WebhookEventsTake: %v", err)
	}
	if again, err := e.s.WebhookEventsTake(t.Context(), 1000); err != nil || len(again) != 0 {
		t.Fatalf("WebhookEventsTake again = %d events, %v; want none", len(again), err)
	}
	return events
}

// eventSummary is what the tests compare of an event.
func eventSummary(ev store.WebhookEvent) string {
	s := ev.Type
	if ev.JobID != [16]byte{} {
		s += fmt.Sprintf(" job=%s %s/%s attempt=%d/%d", ev.JobID, ev.Queue, ev.Kind, ev.Attempt, ev.MaxAttempts)
	}
	if ev.Error != "" {
		s += " error=" + ev.Error
	}
	if ev.URL != "" {
		s += " url=" + ev.URL
	}
	if ev.WorkerID != "" {
		s += " worker=" + ev.WorkerID + "/" + ev.WorkerName
	}
	return s
}

func wantEvents(t *testing.T, what string, got []store.WebhookEvent, want ...string) {
	t.Helper()
	summaries := make([]string, len(got))
	for i, ev := range got {
		summaries[i] = eventSummary(ev)
		if i > 0 && ev.ID <= got[i-1].ID {
			t.Errorf("%s: event ids %d then %d, want ascending", what, got[i-1].ID, ev.ID)
		}
	}
	// The events of one transaction come in no promised order.
	slices.Sort(summaries)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(summaries, want) {
		t.Fatalf("%s: events\n%q\nwant\n%q", what, summaries, want)
	}
}

func testWebhookSubscriptions(t *testing.T, e *env) {
	ctx := t.Context()
	a := store.Webhook{ID: "a", URL: "https://ops.example/hook", Events: []string{"job.failed", "queue.backlog"}, Secret: "whsec_a", Queue: "video"}
	if err := e.s.WebhookCreate(ctx, a); err != nil {
		t.Fatalf("WebhookCreate: %v", err)
	}
	wantErr(t, "create a taken id", e.s.WebhookCreate(ctx, a), job.ErrDuplicate)
	e.clk.Advance(time.Second)
	b := store.Webhook{ID: "b", URL: "https://ops.example/b", Events: []string{"worker.offline"}, Secret: "whsec_b", Config: true}
	if err := e.s.WebhookCreate(ctx, b); err != nil {
		t.Fatalf("WebhookCreate: %v", err)
	}
	if err := e.s.WebhookCreate(ctx, store.Webhook{ID: "c", URL: "https://x", Events: []string{"ping"}}); err == nil {
		t.Fatal("WebhookCreate without a secret: no error")
	}
	got, err := e.s.WebhookGet(ctx, "a")
	if err != nil {
		t.Fatalf("WebhookGet: %v", err)
	}
	if got.URL != a.URL || !slices.Equal(got.Events, a.Events) || got.Secret != a.Secret || got.Queue != "video" || got.Kind != "" || got.Config {
		t.Fatalf("WebhookGet = %+v, want %+v", got, a)
	}
	wantTime(t, "created_at", got.CreatedAt, start)
	wantTime(t, "updated_at", got.UpdatedAt, start)
	_, err = e.s.WebhookGet(ctx, "nope")
	wantErr(t, "get an unknown webhook", err, job.ErrNotFound)

	list, err := e.s.WebhookList(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "a" || list[1].ID != "b" || !list[1].Config {
		t.Fatalf("WebhookList = %+v, %v; want a then b (config)", list, err)
	}

	e.clk.Advance(time.Second)
	up, err := e.s.WebhookUpdate(ctx, store.Webhook{ID: "a", URL: "https://ops.example/v2", Events: []string{"job.rescued"}, Kind: "encode"})
	if err != nil {
		t.Fatalf("WebhookUpdate: %v", err)
	}
	if up.URL != "https://ops.example/v2" || !slices.Equal(up.Events, []string{"job.rescued"}) || up.Queue != "" || up.Kind != "encode" || up.Secret != "whsec_a" {
		t.Fatalf("WebhookUpdate = %+v: want the new URL, events and filter, the secret kept", up)
	}
	wantTime(t, "created_at after an update", up.CreatedAt, start)
	wantTime(t, "updated_at after an update", up.UpdatedAt, e.now())
	up, err = e.s.WebhookUpdate(ctx, store.Webhook{ID: "a", URL: up.URL, Events: up.Events, Secret: "whsec_new"})
	if err != nil || up.Secret != "whsec_new" {
		t.Fatalf("WebhookUpdate with a secret = %+v, %v; want the secret replaced", up, err)
	}
	_, err = e.s.WebhookUpdate(ctx, store.Webhook{ID: "nope", URL: "https://x", Events: []string{"ping"}})
	wantErr(t, "update an unknown webhook", err, job.ErrNotFound)

	if err := e.s.WebhookDelete(ctx, "a"); err != nil {
		t.Fatalf("WebhookDelete: %v", err)
	}
	wantErr(t, "delete it again", e.s.WebhookDelete(ctx, "a"), job.ErrNotFound)
	_, err = e.s.WebhookGet(ctx, "a")
	wantErr(t, "get a deleted webhook", err, job.ErrNotFound)
}

// testWebhookCallbackOnSuccess: a success (the hot path, a batch of
// successes) records the callback of a job with a callback URL, and
// nothing for one without.
func testWebhookCallbackOnSuccess(t *testing.T, e *env) {
	with := e.insert(t, job.InsertParams{Kind: "k", CallbackURL: "https://caller.example/done?id=1"})
	without := e.insert(t, job.InsertParams{Kind: "k"})
	if got := e.get(t, with.ID).CallbackURL; got != "https://caller.example/done?id=1" {
		t.Fatalf("callback_url read back = %q", got)
	}
	if with.CallbackURL == "" || without.CallbackURL != "" {
		t.Fatalf("inserted callback URLs %q and %q", with.CallbackURL, without.CallbackURL)
	}
	jobs := e.claim(t, job.DefaultQueue, 2)
	if len(jobs) != 2 || jobs[0].CallbackURL != with.CallbackURL {
		t.Fatalf("claimed %s, want both jobs, the first with its callback URL", idList(jobs))
	}
	e.clk.Advance(time.Second)
	e.finish(t, outcomeSucceeded(jobs[0], `1`), outcomeSucceeded(jobs[1], `2`))
	events := e.outbox(t)
	wantEvents(t, "after a batch of successes", events,
		fmt.Sprintf("callback job=%s default/k attempt=1/5 url=https://caller.example/done?id=1", with.ID))
	done := e.get(t, with.ID)
	wantTimePtr(t, "the callback's finished_at", events[0].FinishedAt, *done.FinishedAt)
	wantTime(t, "the callback's time", events[0].At, e.now())

	// A bad URL is refused before anything is written.
	before := e.total(t)
	if _, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{{Kind: "k", CallbackURL: "ftp://x/y"}}); !errors.As(err, new(*job.ValidationError)) {
		t.Fatalf("insert with an ftp callback URL: err = %v, want a validation error", err)
	}
	if e.total(t) != before {
		t.Fatal("a refused insert wrote a job")
	}
}

// testWebhookCallbackOnFailureAndRetry: a mixed batch records the callback
// of the job it makes final and job.failed for it; a retryable failure
// with attempts left records nothing; an operator's retry records nothing
// and the job's next end records its callback again.
func testWebhookCallbackOnFailureAndRetry(t *testing.T, e *env) {
	url := "http://caller.example/cb"
	dies := e.insert(t, job.InsertParams{Kind: "k", Queue: "q", MaxAttempts: 1, CallbackURL: url})
	again := e.insert(t, job.InsertParams{Kind: "k", Queue: "q", MaxAttempts: 3, CallbackURL: url})
	fine := e.insert(t, job.InsertParams{Kind: "k", Queue: "q", CallbackURL: url})
	jobs := e.claim(t, "q", 3)
	byID := map[[16]byte]*job.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	e.finish(t,
		store.Outcome{Lease: leaseOf(byID[dies.ID]), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "bad input", Retryable: true}},
		store.Outcome{Lease: leaseOf(byID[again.ID]), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "flaky", Retryable: true}},
		outcomeSucceeded(byID[fine.ID], `"ok"`),
	)
	wantEvents(t, "after a mixed batch", e.outbox(t),
		fmt.Sprintf("callback job=%s q/k attempt=1/1 error=bad input url=%s", dies.ID, url),
		fmt.Sprintf("job.failed job=%s q/k attempt=1/1 error=bad input", dies.ID),
		fmt.Sprintf("callback job=%s q/k attempt=1/5 url=%s", fine.ID, url),
	)
	if _, err := e.s.JobRetry(t.Context(), dies.ID); err != nil {
		t.Fatalf("JobRetry: %v", err)
	}
	wantEvents(t, "after an operator's retry", e.outbox(t))
	c := e.claimOne(t, "q")
	if c.ID != dies.ID {
		t.Fatalf("claimed %s, want the retried job", c.ID)
	}
	e.clk.Advance(time.Minute)
	e.fail(t, c, false, 0)
	events := e.outbox(t)
	wantEvents(t, "after the retried job failed again", events,
		fmt.Sprintf("callback job=%s q/k attempt=1/1 error=boom url=%s", dies.ID, url),
		fmt.Sprintf("job.failed job=%s q/k attempt=1/1 error=boom", dies.ID),
	)
	for _, ev := range events {
		wantTimePtr(t, "the second end's finished_at", ev.FinishedAt, e.now())
	}
}

// testWebhookCallbackOnCancel: canceling a queued job records its
// callback; asking a running one to stop records nothing until its holder
// ends it.
func testWebhookCallbackOnCancel(t *testing.T, e *env) {
	url := "https://caller.example/cb"
	queued := e.insert(t, job.InsertParams{Kind: "k", Queue: "a", CallbackURL: url})
	e.cancel(t, queued.ID)
	wantEvents(t, "after canceling a queued job", e.outbox(t),
		fmt.Sprintf("callback job=%s a/k attempt=0/5 url=%s", queued.ID, url))

	e.insert(t, job.InsertParams{Kind: "k", Queue: "b", CallbackURL: url})
	running := e.claimOne(t, "b")
	e.cancel(t, running.ID)
	wantEvents(t, "after asking a running job to stop", e.outbox(t))
	e.finishOne(t, store.Outcome{Lease: leaseOf(running), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "stopped", Retryable: true}})
	wantEvents(t, "after its holder stopped", e.outbox(t),
		fmt.Sprintf("callback job=%s b/k attempt=1/5 error=stopped url=%s", running.ID, url))
}

// testWebhookRescueEvents: a rescue back to the queue records
// job.rescued; a rescue out of attempts records job.failed (and the
// callback).
func testWebhookRescueEvents(t *testing.T, e *env) {
	url := "https://caller.example/cb"
	back := e.insert(t, job.InsertParams{Kind: "k", Queue: "r1", LeaseTTL: time.Minute})
	done := e.insert(t, job.InsertParams{Kind: "k", Queue: "r2", LeaseTTL: time.Minute, MaxAttempts: 1, CallbackURL: url})
	e.claimOne(t, "r1")
	e.claimOne(t, "r2")
	e.clk.Advance(2 * time.Minute)
	if n := e.rescue(t, 10); n != 2 {
		t.Fatalf("rescued %d, want 2", n)
	}
	events := e.outbox(t)
	wantEvents(t, "after the rescue", events,
		fmt.Sprintf("job.rescued job=%s r1/k attempt=1/5", back.ID),
		fmt.Sprintf("callback job=%s r2/k attempt=1/1 error=lease expired url=%s", done.ID, url),
		fmt.Sprintf("job.failed job=%s r2/k attempt=1/1 error=lease expired", done.ID),
	)
	for _, ev := range events {
		wantTime(t, "event time", ev.At, e.now())
	}
}

// testWebhookTimeoutEvents: an attempt that passed its deadline records
// job.timed_out, without FinishedAt when the job goes back to the queue,
// with it (and the callback) when it failed for good.
func testWebhookTimeoutEvents(t *testing.T, e *env) {
	url := "https://caller.example/cb"
	again := e.insert(t, job.InsertParams{Kind: "k", Queue: "t1", Timeout: time.Minute, LeaseTTL: 5 * time.Minute})
	last := e.insert(t, job.InsertParams{Kind: "k", Queue: "t2", Timeout: time.Minute, LeaseTTL: 5 * time.Minute,
		MaxAttempts: 1, CallbackURL: url})
	e.claimOne(t, "t1")
	e.claimOne(t, "t2")
	e.clk.Advance(61 * time.Second)
	if n := e.timeOut(t, 10, time.Second); n != 2 {
		t.Fatalf("timed out %d, want 2", n)
	}
	events := e.outbox(t)
	wantEvents(t, "after the time-outs", events,
		fmt.Sprintf("job.timed_out job=%s t1/k attempt=1/5 error=timed out after 1m0s", again.ID),
		fmt.Sprintf("job.timed_out job=%s t2/k attempt=1/1 error=timed out after 1m0s", last.ID),
		fmt.Sprintf("callback job=%s t2/k attempt=1/1 error=timed out after 1m0s url=%s", last.ID, url),
	)
	for _, ev := range events {
		switch {
		case ev.JobID == again.ID && ev.FinishedAt != nil:
			t.Fatalf("the retried job's event has finished_at %v", ev.FinishedAt)
		case ev.JobID == last.ID:
			wantTimePtr(t, "the failed job's finished_at", ev.FinishedAt, e.now())
		}
	}
}

func testWebhookWorkerOffline(t *testing.T, e *env) {
	e.newWorker(t, "w1")
	e.newWorker(t, "w2")
	e.clk.Advance(time.Hour)
	e.seen(t, "w2", store.WorkerIdle)
	if n, err := e.s.WorkerMarkOffline(t.Context(), e.now().Add(-time.Minute)); err != nil || n != 1 {
		t.Fatalf("WorkerMarkOffline = %d, %v; want 1", n, err)
	}
	wantEvents(t, "after the sweep", e.outbox(t), "worker.offline worker=w1/w-w1")
	if n, err := e.s.WorkerMarkOffline(t.Context(), e.now().Add(-time.Minute)); err != nil || n != 0 {
		t.Fatalf("WorkerMarkOffline again = %d, %v; want 0", n, err)
	}
	wantEvents(t, "after a sweep that marked nothing", e.outbox(t))
}

// testWebhookTakeRollsBack: events taken in a transaction that rolls back
// are there again.
func testWebhookTakeRollsBack(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", CallbackURL: "https://x.example/"})
	e.succeed(t, e.claimOne(t, job.DefaultQueue))
	boom := errors.New("boom")
	err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
		events, err := ex.WebhookEventsTake(ctx, 10)
		if err != nil {
			return err
		}
		if len(events) != 1 {
			return fmt.Errorf("took %d events in the transaction, want 1", len(events))
		}
		return boom
	})
	wantErr(t, "InTx", err, boom)
	if got := e.outbox(t); len(got) != 1 || got[0].Type != store.WebhookCallback {
		t.Fatalf("after the rollback: %d events, want the callback again", len(got))
	}
}

// testWebhookTakeConcurrent: concurrent takers never get the same event,
// and together they get them all.
func testWebhookTakeConcurrent(t *testing.T, e *env) {
	const jobs = 40
	params := make([]job.InsertParams, jobs)
	for i := range params {
		params[i] = job.InsertParams{Kind: "k", CallbackURL: "https://x.example/"}
	}
	e.insertMany(t, params...)
	for _, j := range e.claim(t, job.DefaultQueue, jobs) {
		e.succeed(t, j)
	}
	var (
		mu   sync.Mutex
		seen = map[int64]int{}
		wg   sync.WaitGroup
		errs = make(chan error, 4)
	)
	for range 4 {
		wg.Go(func() {
			for {
				var got []store.WebhookEvent
				err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
					var err error
					got, err = ex.WebhookEventsTake(ctx, 3)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, ev := range got {
					seen[ev.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("take: %v", err)
	}
	if len(seen) != jobs {
		t.Fatalf("took %d distinct events, want %d", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("event %d taken %d times", id, n)
		}
	}
}

func testWebhookLimits(t *testing.T, e *env) {
	ctx := t.Context()
	for _, id := range []string{"h1", "h2"} {
		if err := e.s.WebhookCreate(ctx, store.Webhook{ID: id, URL: "https://x.example/", Events: []string{"job.failed"}, Secret: "whsec_x"}); err != nil {
			t.Fatal(err)
		}
	}
	k1 := store.WebhookLimitKey{Webhook: "h1", Event: "job.failed", Key: "q"}
	k2 := store.WebhookLimitKey{Webhook: "h1", Event: "failure.pattern", Key: "q/k"}
	k3 := store.WebhookLimitKey{Webhook: "h2", Event: "job.failed", Key: ""}
	lock := func(keys ...store.WebhookLimitKey) []store.WebhookLimit {
		t.Helper()
		var limits []store.WebhookLimit
		err := e.s.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
			var err error
			limits, err = ex.WebhookLimitsLock(ctx, keys)
			return err
		})
		if err != nil {
			t.Fatalf("WebhookLimitsLock: %v", err)
		}
		return limits
	}
	fresh := lock(k3, k1, k2, k1)
	if len(fresh) != 3 || fresh[0].WebhookLimitKey != k2 || fresh[1].WebhookLimitKey != k1 || fresh[2].WebhookLimitKey != k3 {
		t.Fatalf("WebhookLimitsLock = %+v, want k2, k1, k3 (key order, no duplicate)", fresh)
	}
	for _, l := range fresh {
		if l.SentAt != nil || l.Suppressed != 0 || l.WindowStart != nil || l.WindowCount != 0 {
			t.Fatalf("a new limit = %+v, want nothing sent, suppressed or counted", l)
		}
	}
	sent := e.now().Add(-time.Minute)
	window := e.now().Add(-30 * time.Second)
	fresh[0].WindowStart, fresh[0].WindowCount = &window, 4
	fresh[1].SentAt, fresh[1].Suppressed = &sent, 3
	fresh[2].SentAt = &sent
	if err := e.s.WebhookLimitsSave(ctx, fresh); err != nil {
		t.Fatalf("WebhookLimitsSave: %v", err)
	}
	again := lock(k1, k2, k3)
	if again[0].WindowCount != 4 || again[0].WindowStart == nil || again[1].Suppressed != 3 || again[2].Suppressed != 0 {
		t.Fatalf("limits read back = %+v", again)
	}
	wantTimePtr(t, "window_start", again[0].WindowStart, window)
	wantTimePtr(t, "sent_at", again[1].SentAt, sent)

	due, err := e.s.WebhookLimitsDue(ctx, sent, 10)
	if err != nil || len(due) != 1 || due[0].WebhookLimitKey != k1 || due[0].Suppressed != 3 {
		t.Fatalf("WebhookLimitsDue(sent) = %+v, %v; want k1 only", due, err)
	}
	if due, err := e.s.WebhookLimitsDue(ctx, sent.Add(-time.Microsecond), 10); err != nil || len(due) != 0 {
		t.Fatalf("WebhookLimitsDue(before sent) = %+v, %v; want none", due, err)
	}

	if err := e.s.WebhookDelete(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	if got := lock(k1); got[0].Suppressed != 0 || got[0].SentAt != nil {
		t.Fatalf("a limit of a deleted webhook = %+v, want it gone (new again)", got[0])
	}
}

// testWebhookLimitsConcurrent: deciders that lock, change and save one
// limit at once, each in its own transaction, never decide from the same
// state: no increment is lost.
func testWebhookLimitsConcurrent(t *testing.T, e *env) {
	key := store.WebhookLimitKey{Webhook: "h", Event: "job.failed", Key: "q"}
	other := store.WebhookLimitKey{Webhook: "h", Event: "job.rescued", Key: "q"}
	const deciders, rounds = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, deciders)
	for d := range deciders {
		wg.Go(func() {
			for range rounds {
				err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
					keys := []store.WebhookLimitKey{key, other}
					if d%2 == 1 {
						keys = []store.WebhookLimitKey{other, key}
					}
					limits, err := ex.WebhookLimitsLock(ctx, keys)
					if err != nil {
						return err
					}
					for i := range limits {
						limits[i].Suppressed++
					}
					return ex.WebhookLimitsSave(ctx, limits)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("decider: %v", err)
	}
	var got []store.WebhookLimit
	err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
		var err error
		got, err = ex.WebhookLimitsLock(ctx, []store.WebhookLimitKey{key, other})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range got {
		if l.Suppressed != deciders*rounds {
			t.Fatalf("limit %+v: suppressed %d, want %d", l.WebhookLimitKey, l.Suppressed, deciders*rounds)
		}
	}
}

func testWebhookSettings(t *testing.T, e *env) {
	ctx := t.Context()
	_, err := e.s.SettingGet(ctx, "callback_secret")
	wantErr(t, "get an unset setting", err, job.ErrNotFound)
	v, err := e.s.SettingInit(ctx, "callback_secret", "first")
	if err != nil || v != "first" {
		t.Fatalf("SettingInit = %q, %v; want first", v, err)
	}
	if v, err := e.s.SettingInit(ctx, "callback_secret", "second"); err != nil || v != "first" {
		t.Fatalf("SettingInit again = %q, %v; want the first value kept", v, err)
	}
	if v, err := e.s.SettingGet(ctx, "callback_secret"); err != nil || v != "first" {
		t.Fatalf("SettingGet = %q, %v; want first", v, err)
	}
	// Concurrent first initialisations agree.
	var wg sync.WaitGroup
	got := make([]string, 4)
	errs := make([]error, 4)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = e.s.SettingInit(ctx, "race", fmt.Sprint("v", i)) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("concurrent SettingInit: %q (%v), want all equal to %q", got[i], errs[i], got[0])
		}
	}
}

// testWebhookPruneEvents: retention removes events older than its
// cutoff, as it removes jobs, so that an outbox nobody dispatches does
// not grow.
func testWebhookPruneEvents(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", CallbackURL: "https://x.example/"})
	e.succeed(t, e.claimOne(t, job.DefaultQueue))
	e.clk.Advance(time.Hour)
	e.insert(t, job.InsertParams{Kind: "k", CallbackURL: "https://x.example/"})
	late := e.claimOne(t, job.DefaultQueue)
	e.succeed(t, late)
	if _, err := e.s.JobPrune(t.Context(), e.now().Add(-time.Minute), 100); err != nil {
		t.Fatalf("JobPrune: %v", err)
	}
	events := e.outbox(t)
	if len(events) != 1 || events[0].JobID != late.ID {
		t.Fatalf("after pruning: %d events, want the late job's callback only", len(events))
	}
}
