package webhook

import (
	"context"
	"fmt"
	"slices"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/store"
)

// checkBacklog is the level alerts' pass (DutyAlerts, on the leader): a
// queue.backlog alert for each queue whose oldest due job has waited
// BacklogAge or more, to each subscription that receives them, under the
// rate limits. It reads the store only when a subscription receives
// queue.backlog.
func (s *Service) checkBacklog(ctx context.Context) error {
	subs, err := s.store.WebhookList(ctx)
	if err != nil {
		return fmt.Errorf("webhook: backlog: %w", err)
	}
	if !slices.ContainsFunc(subs, func(w store.Webhook) bool { return slices.Contains(w.Events, api.EventQueueBacklog) }) {
		return nil
	}
	h, err := s.store.QueueHealth(ctx, store.HealthParams{})
	if err != nil {
		return fmt.Errorf("webhook: backlog: %w", err)
	}
	var alerts []alert
	for _, q := range h.Queues {
		if q.OldestAvailable == nil {
			continue
		}
		age := h.At.Sub(*q.OldestAvailable)
		if age < s.cfg.BacklogAge {
			continue
		}
		at := q.OldestAvailable.UTC()
		for _, sub := range subs {
			if !slices.Contains(sub.Events, api.EventQueueBacklog) || !passes(sub, q.Queue, "") {
				continue
			}
			alerts = append(alerts, alert{
				key: store.WebhookLimitKey{Webhook: sub.ID, Event: api.EventQueueBacklog, Key: q.Queue},
				at:  h.At,
				data: api.AlertData{Queue: q.Queue, OldestAvailableAt: &at, OldestAvailableAge: api.Duration(age),
					Threshold: api.Duration(s.cfg.BacklogAge), OldestAvailableAgeSeconds: api.Seconds(age),
					ThresholdSeconds: api.Seconds(s.cfg.BacklogAge)},
			})
		}
	}
	if len(alerts) == 0 {
		return nil
	}
	err = s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		deliveries, err := s.limit(ctx, ex, alerts, nil)
		if err != nil || len(deliveries) == 0 {
			return err
		}
		_, err = ex.JobInsertMany(ctx, deliveries)
		return err
	})
	if err != nil {
		return fmt.Errorf("webhook: backlog: %w", err)
	}
	return nil
}
