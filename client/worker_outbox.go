package client

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/jobd/jobd/api"
)

// pending is an outcome on its way to the server.
type pending struct {
	item api.OutcomeItem
	job  api.ClaimedJob
	// expires is when the job's lease expires, as last renewed: the
	// outcome is sent again until it is answered or then.
	expires time.Time
}

// outbox holds the outcomes not answered yet: waiting, or in the
// request on its way (sending). A heartbeat renews their leases too.
type outbox struct {
	mu      sync.Mutex
	waiting []*pending
	sending []*pending
	closed  bool
	// kick wakes the sender; drained tells the claim loop that the
	// outbox emptied.
	kick, drained chan struct{}
}

func (o *outbox) init() {
	o.kick = make(chan struct{}, 1)
	o.drained = make(chan struct{}, 1)
}

// add queues p for the sender.
func (o *outbox) add(p *pending) {
	o.mu.Lock()
	o.waiting = append(o.waiting, p)
	o.mu.Unlock()
	signal(o.kick)
}

// close tells the sender that nothing more comes: it returns once the
// outbox is empty.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	signal(o.kick)
}

// len counts the outcomes not answered yet.
func (o *outbox) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.waiting) + len(o.sending)
}

// take moves up to api.MaxOutcomes waiting outcomes to sending; done
// reports that none waits and nothing more comes.
func (o *outbox) take() (batch []*pending, done bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := min(len(o.waiting), api.MaxOutcomes)
	batch = o.waiting[:n:n]
	o.waiting = o.waiting[n:]
	o.sending = batch
	return batch, n == 0 && o.closed
}

// sent forgets the batch in sending, answered or given up.
func (o *outbox) sent() {
	o.mu.Lock()
	o.sending = nil
	empty := len(o.waiting) == 0
	o.mu.Unlock()
	if empty {
		signal(o.drained)
	}
}

// each calls fn with every outcome not answered yet, under the lock.
func (o *outbox) each(fn func(p *pending)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.waiting {
		fn(p)
	}
	for _, p := range o.sending {
		fn(p)
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// outcomeTimeout bounds one request of outcomes: one that got no answer
// within it is sent again.
const outcomeTimeout = 30 * time.Second

// sendOutcomes sends the outcomes as they come, in batches, one request
// at a time, until the outbox is closed and empty (or ctx ends).
func (w *Worker) sendOutcomes(ctx context.Context) {
	for {
		batch, done := w.out.take()
		if done {
			return
		}
		if len(batch) == 0 {
			select {
			case <-w.out.kick:
			case <-ctx.Done():
				return
			}
			continue
		}
		w.report(ctx, batch)
		w.out.sent()
	}
}

// report sends a batch of outcomes until it is answered, sending it
// again, as it was, when a request gets no answer; an outcome whose
// lease would have expired meanwhile is given up. It acts on each
// answer: a repeat was applied before (its first answer was lost), a
// lost lease or a refusal drops the outcome.
func (w *Worker) report(ctx context.Context, batch []*pending) {
	delay := retryMin
	for len(batch) > 0 && ctx.Err() == nil {
		items := make([]api.OutcomeItem, len(batch))
		for i, p := range batch {
			items[i] = p.item
		}
		rctx, cancel := context.WithTimeout(ctx, outcomeTimeout)
		answers, err := w.c.ReportOutcomes(rctx, items)
		cancel()
		if err == nil {
			for i, a := range answers {
				w.answered(batch[i], a)
			}
			return
		}
		if !unanswered(ctx, err) {
			w.log.Warn("jobd worker: outcomes refused; dropped", "outcomes", len(batch), "err", err)
			return
		}
		batch = w.unexpired(batch, err)
		if len(batch) > 0 {
			w.log.Debug("jobd worker: outcomes got no answer; sending them again", "outcomes", len(batch), "err", err, "in", delay)
			if sleep(ctx, delay) != nil {
				return
			}
			delay = min(2*delay, retryMax)
		}
	}
}

// unanswered reports whether a request of outcomes that failed with err
// may not have been answered: no answer came (a broken connection, its
// own timeout, an answer that could not be read), or the server was
// unavailable past the client's own retries.
func unanswered(ctx context.Context, err error) bool {
	var e *Error
	switch {
	case ctx.Err() != nil:
		return false
	case errors.As(err, &e):
		return errors.Is(e, ErrUnavailable)
	}
	return true
}

// unexpired keeps the outcomes of batch whose leases have not expired,
// logging the others, given up.
func (w *Worker) unexpired(batch []*pending, err error) []*pending {
	now := time.Now()
	keep := make([]*pending, 0, len(batch)) // batch is the outbox's sending too
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range batch {
		if now.Before(p.expires) {
			keep = append(keep, p)
			continue
		}
		w.log.Warn("jobd worker: outcome never answered before its lease expired; given up", "job_id", p.item.ID,
			"outcome", p.item.Outcome, "err", err)
	}
	return keep
}

// answered acts on the server's answer to one outcome.
func (w *Worker) answered(p *pending, a api.OutcomeAnswer) {
	switch {
	case a.Status == http.StatusOK && a.Repeat:
		w.log.Debug("jobd worker: outcome applied before (its answer was lost)", "job_id", p.item.ID, "state", a.State)
	case a.Status == http.StatusOK:
	case a.Problem != nil && a.Problem.Type == api.ProblemLeaseLost:
		w.log.Warn("jobd worker: lease lost; outcome dropped", "job_id", p.item.ID, "outcome", p.item.Outcome)
	default:
		w.log.Warn("jobd worker: outcome refused", "job_id", p.item.ID, "outcome", p.item.Outcome, "status", a.Status,
			"problem", a.Problem)
	}
}
