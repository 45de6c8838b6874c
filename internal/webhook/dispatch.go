package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// dispatchBatch is how many outbox events one transaction of the
// dispatcher turns into deliveries.
const dispatchBatch = 100

// alert is an alert for one subscription, sent unless its rate limit
// holds it back.
type alert struct {
	key  store.WebhookLimitKey
	at   time.Time
	data api.AlertData
}

// failure is a job's failure for one subscription's failure.pattern.
type failure struct {
	key         store.WebhookLimitKey
	at          time.Time
	queue, kind string
}

// dispatch is the dispatcher's pass (DutyDispatch): it turns the outbox
// into deliveries, a batch per transaction, until it is empty, then
// sends the counts of suppressed alerts that are due.
func (s *Service) dispatch(ctx context.Context) error {
	total := 0
	defer func() { s.points.Dispatched.Report(total) }()
	for {
		n, more, err := s.dispatchOnce(ctx)
		total += n
		if err != nil {
			return fmt.Errorf("webhook: dispatch: %w", err)
		}
		if !more {
			break
		}
	}
	if now := s.clock.Now(); now.Sub(s.flushed) >= s.flushEvery() {
		n, err := s.flush(ctx)
		total += n
		if err != nil {
			return fmt.Errorf("webhook: suppressed alerts: %w", err)
		}
		s.flushed = now
	}
	return nil
}

// flushEvery is how often a node looks for the counts of suppressed
// alerts that are due: a sixth of the rate limit's interval, so that a
// count goes out at most that late, and the store is not asked each
// second.
func (s *Service) flushEvery() time.Duration {
	return max(s.cfg.AlertInterval/6, s.cfg.DispatchInterval)
}

// dispatchOnce takes a batch of the outbox and, in the same transaction,
// queues its deliveries and saves the rate limits it decided. more says
// the batch was full.
func (s *Service) dispatchOnce(ctx context.Context) (queued int, more bool, err error) {
	var events []store.WebhookEvent
	err = s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		var err error
		events, err = ex.WebhookEventsTake(ctx, dispatchBatch)
		if err != nil || len(events) == 0 {
			return err
		}
		more = len(events) == dispatchBatch
		subs, err := ex.WebhookList(ctx)
		if err != nil {
			return err
		}
		var (
			deliveries []job.InsertParams
			alerts     []alert
			failures   []failure
		)
		for _, ev := range events {
			if ev.Type == store.WebhookCallback {
				p, err := s.callbackDelivery(ev)
				if err != nil {
					return err
				}
				deliveries = append(deliveries, p)
				continue
			}
			if ev.Type == store.WebhookWorkflowFinished {
				ps, err := s.workflowDeliveries(ev, subs)
				if err != nil {
					return err
				}
				deliveries = append(deliveries, ps...)
				continue
			}
			if ev.Queue == Queue {
				continue // a delivery that failed alerts nobody: it could only fail again
			}
			a, f := alertsOf(ev, subs)
			alerts, failures = append(alerts, a...), append(failures, f...)
			if ev.Type == store.WebhookJobTimedOut && ev.FinishedAt != nil {
				// The attempt that timed out was the last: failed for good.
				failed := ev
				failed.Type = store.WebhookJobFailed
				a, f := alertsOf(failed, subs)
				alerts, failures = append(alerts, a...), append(failures, f...)
			}
		}
		limited, err := s.limit(ctx, ex, alerts, failures)
		if err != nil {
			return err
		}
		deliveries = append(deliveries, limited...)
		queued = len(deliveries)
		if queued == 0 {
			return nil
		}
		_, err = ex.JobInsertMany(ctx, deliveries)
		return err
	})
	if err == nil {
		s.recordWorkflows(events)
	}
	return queued, more, err
}

// workflowDeliveries are the deliveries of a workflow.finished event: one
// to each subscription that receives the type. A workflow has no queue or
// kind, so it passes every filter; and no rate limit holds it back: each
// is the end of one workflow, as a callback is one job's.
func (s *Service) workflowDeliveries(ev store.WebhookEvent, subs []store.Webhook) ([]job.InsertParams, error) {
	var out []job.InsertParams
	for _, sub := range subs {
		if !slices.Contains(sub.Events, ev.Type) {
			continue
		}
		data := api.WorkflowFinishedData{Workflow: api.WorkflowFinished{ID: ev.WorkflowID, Name: ev.WorkflowName,
			State: api.WorkflowState(ev.WorkflowState), FinishedAt: finishedAt(ev).UTC()}}
		raw, err := json.Marshal(data)
		if err != nil {
			return nil, err
		}
		p, err := s.subscriptionDelivery(sub.ID, ev.Type, ev.At, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// finishedAt is when ev's workflow ended: its FinishedAt, else the event's
// time.
func finishedAt(ev store.WebhookEvent) time.Time {
	if ev.FinishedAt != nil {
		return *ev.FinishedAt
	}
	return ev.At
}

// recordWorkflows records the ends of workflows among events, which a
// committed transaction took from the outbox: once in the cluster. A
// workflow's id is a UUIDv7, whose time is its submission's.
func (s *Service) recordWorkflows(events []store.WebhookEvent) {
	for _, ev := range events {
		if ev.Type != store.WebhookWorkflowFinished {
			continue
		}
		took := time.Duration(-1)
		if ev.WorkflowID.Version() == 7 {
			sec, nsec := ev.WorkflowID.Time().UnixTime()
			took = finishedAt(ev).Sub(time.Unix(sec, nsec))
		}
		s.cfg.Workflows.WorkflowFinished(ev.WorkflowName, string(ev.WorkflowState), took)
	}
}

// alertsOf is what an outbox event means for the subscriptions: an alert
// for each that receives its type and whose filter it passes, and a
// failure for each that receives failure.pattern.
func alertsOf(ev store.WebhookEvent, subs []store.Webhook) ([]alert, []failure) {
	var (
		alerts   []alert
		failures []failure
	)
	for _, sub := range subs {
		if slices.Contains(sub.Events, ev.Type) && passes(sub, ev.Queue, ev.Kind) {
			a := alert{key: store.WebhookLimitKey{Webhook: sub.ID, Event: ev.Type, Key: ev.Queue}, at: ev.At,
				data: api.AlertData{Queue: ev.Queue, Kind: ev.Kind}}
			switch ev.Type {
			case store.WebhookJobFailed, store.WebhookJobRescued, store.WebhookJobTimedOut:
				a.data.Job = &api.AlertJob{ID: ev.JobID.String(), Attempt: ev.Attempt, MaxAttempts: ev.MaxAttempts, Error: ev.Error}
			case store.WebhookWorkerOffline:
				a.data.Worker = &api.AlertWorker{ID: ev.WorkerID, Name: ev.WorkerName}
			}
			alerts = append(alerts, a)
		}
		if ev.Type == store.WebhookJobFailed && slices.Contains(sub.Events, api.EventFailurePattern) && passes(sub, ev.Queue, ev.Kind) {
			failures = append(failures, failure{key: patternKey(sub.ID, ev.Queue, ev.Kind), at: ev.At, queue: ev.Queue, kind: ev.Kind})
		}
	}
	return alerts, failures
}

// passes reports whether an event of queue and kind passes sub's filter.
// A filter's member applies to the events that have one: a worker's
// event passes any filter, a queue's any kind.
func passes(sub store.Webhook, queue, kind string) bool {
	return (sub.Queue == "" || queue == "" || sub.Queue == queue) && (sub.Kind == "" || kind == "" || sub.Kind == kind)
}

// patternSep joins a queue and a kind in a failure pattern's key: a
// character no queue or kind holds.
const patternSep = "\x1f"

func patternKey(webhook, queue, kind string) store.WebhookLimitKey {
	return store.WebhookLimitKey{Webhook: webhook, Event: api.EventFailurePattern, Key: queue + patternSep + kind}
}

// keyData is the data that names a limit's key: its queue, and for a
// failure pattern its kind.
func keyData(k store.WebhookLimitKey) api.AlertData {
	if k.Event == api.EventFailurePattern {
		queue, kind, _ := strings.Cut(k.Key, patternSep)
		return api.AlertData{Queue: queue, Kind: kind}
	}
	return api.AlertData{Queue: k.Key}
}

// limit decides, in the caller's transaction, which alerts go out: it
// locks their rate limits, counts the failures into failure patterns
// (which become alerts too), applies the limits and saves them, and
// returns the deliveries of the alerts that go out.
func (s *Service) limit(ctx context.Context, ex store.Executor, alerts []alert, failures []failure) ([]job.InsertParams, error) {
	if len(alerts) == 0 && len(failures) == 0 {
		return nil, nil
	}
	keys := make([]store.WebhookLimitKey, 0, len(alerts)+len(failures))
	for _, a := range alerts {
		keys = append(keys, a.key)
	}
	for _, f := range failures {
		keys = append(keys, f.key)
	}
	limits, err := ex.WebhookLimitsLock(ctx, keys)
	if err != nil {
		return nil, err
	}
	byKey := make(map[store.WebhookLimitKey]*store.WebhookLimit, len(limits))
	for i := range limits {
		byKey[limits[i].WebhookLimitKey] = &limits[i]
	}
	for _, f := range failures {
		l := byKey[f.key]
		if l == nil {
			return nil, fmt.Errorf("no rate limit was locked for %+v", f.key)
		}
		if pattern, n := countFailure(l, f.at, s.cfg.FailureWindow, max(s.cfg.FailureCount, 1)); pattern {
			alerts = append(alerts, alert{key: f.key, at: f.at, data: api.AlertData{
				Queue: f.queue, Kind: f.kind, Failures: n, Window: api.Duration(s.cfg.FailureWindow),
				WindowSeconds: api.Seconds(s.cfg.FailureWindow)}})
		}
	}
	now := s.clock.Now()
	var deliveries []job.InsertParams
	for _, a := range alerts {
		l := byKey[a.key]
		if l == nil {
			return nil, fmt.Errorf("no rate limit was locked for %+v", a.key)
		}
		send, suppressed := allow(l, now, s.cfg.AlertInterval)
		if !send {
			continue
		}
		a.data.Suppressed = suppressed
		p, err := s.alertDelivery(a.key, a.at, a.data)
		if err != nil {
			return nil, err
		}
		deliveries = append(deliveries, p)
	}
	if err := ex.WebhookLimitsSave(ctx, limits); err != nil {
		return nil, err
	}
	return deliveries, nil
}

// flushBatch is how many due limits one flush handles.
const flushBatch = 100

// flush sends, for each rate limit that suppressed alerts and sent its
// last one an interval or more ago, an alert that reports the count, so
// that it is told even when no alert of its type comes again.
func (s *Service) flush(ctx context.Context) (int, error) {
	queued := 0
	err := s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		now := s.clock.Now()
		due, err := ex.WebhookLimitsDue(ctx, now.Add(-s.cfg.AlertInterval), flushBatch)
		if err != nil || len(due) == 0 {
			return err
		}
		subs, err := ex.WebhookList(ctx)
		if err != nil {
			return err
		}
		var deliveries []job.InsertParams
		for i := range due {
			l := &due[i]
			i := slices.IndexFunc(subs, func(w store.Webhook) bool { return w.ID == l.Webhook })
			if i >= 0 && slices.Contains(subs[i].Events, l.Event) {
				data := keyData(l.WebhookLimitKey)
				data.Suppressed = l.Suppressed
				p, err := s.alertDelivery(l.WebhookLimitKey, now, data)
				if err != nil {
					return err
				}
				deliveries = append(deliveries, p)
			}
			l.SentAt, l.Suppressed = &now, 0
		}
		if err := ex.WebhookLimitsSave(ctx, due); err != nil {
			return err
		}
		queued = len(deliveries)
		if queued == 0 {
			return nil
		}
		_, err = ex.JobInsertMany(ctx, deliveries)
		return err
	})
	return queued, err
}

// alertDelivery is the delivery job of an alert of key's type to key's
// subscription, at at.
func (s *Service) alertDelivery(key store.WebhookLimitKey, at time.Time, data api.AlertData) (job.InsertParams, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return job.InsertParams{}, err
	}
	return s.subscriptionDelivery(key.Webhook, key.Event, at, raw)
}

// subscriptionDelivery is the delivery job of a payload of type event to
// a subscription.
func (s *Service) subscriptionDelivery(webhook, event string, at time.Time, data json.RawMessage) (job.InsertParams, error) {
	payload, err := json.Marshal(api.WebhookPayload{Type: event, Timestamp: at.UTC(), Data: data})
	if err != nil {
		return job.InsertParams{}, err
	}
	return s.deliveryJob(delivery{Type: event, Webhook: webhook, Payload: payload})
}

// callbackDelivery is the delivery job of an outbox callback.
func (s *Service) callbackDelivery(ev store.WebhookEvent) (job.InsertParams, error) {
	id := ev.JobID
	return s.deliveryJob(delivery{Type: api.EventJobFinished, URL: ev.URL, JobID: &id, FinishedAt: ev.FinishedAt})
}

func (s *Service) deliveryJob(d delivery) (job.InsertParams, error) {
	args, err := json.Marshal(d)
	if err != nil {
		return job.InsertParams{}, err
	}
	return job.InsertParams{Queue: Queue, Kind: Kind, Args: args, MaxAttempts: s.cfg.MaxAttempts}, nil
}
