package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobFinish applies the lease holders' outcomes in one transaction, each
// fenced by its token. Outcomes are checked first (store.CheckOutcomes):
// one with an unknown status or a result that is not JSON fails the call
// and writes nothing. A batch of successes of distinct jobs, the hot
// path, is one statement that reads nothing first; any other batch reads
// the facts of the jobs still held, decides in Go (store.DecideFinish:
// of two outcomes for one lease the first wins) and applies the decisions,
// with the journal entries they decided, in one statement, then the
// workflow step of the workflow tasks it ended. The hot statement leaves
// workflow tasks alone: the outcomes it did not apply (tasks', and lost
// leases') take the general path, in the same transaction.
func (s *executor) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	if len(outcomes) == 0 {
		return nil, nil
	}
	if err := store.CheckOutcomes(outcomes); err != nil {
		return nil, err
	}
	var (
		wake    *wakeups
		results []store.FinishResult
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		var err error
		if store.SucceededOnce(outcomes) {
			results, err = finishSucceeded(ctx, tx, wake, outcomes)
			if err == nil {
				err = s.finishRest(ctx, tx, wake, outcomes, results)
			}
		} else {
			results, err = s.finish(ctx, tx, wake, outcomes)
		}
		if err != nil {
			return err
		}
		return repeats(ctx, tx, outcomes, results)
	})
	if err != nil {
		return nil, errorf("sqlite: finish jobs: %w", err)
	}
	s.send(wake)
	return results, nil
}

// finishSucceeded applies a batch of successes of distinct jobs in one
// statement, with the state job.Finish decides for every success
// (job.SucceededState), which leaves the journal as it is: the row
// implies the success's entry. It notes the wake-ups of the queues whose
// room the successes freed (wakeups.left).
func finishSucceeded(ctx context.Context, tx *jobWrite, wake *wakeups, outcomes []store.Outcome) ([]store.FinishResult, error) {
	type success struct {
		ID     string  `json:"id"`
		Token  string  `json:"token"`
		Owner  string  `json:"owner"`
		Result *string `json:"result,omitempty"`
	}
	batch := make([]success, len(outcomes))
	index := make(map[string]int, len(outcomes))
	results := make([]store.FinishResult, len(outcomes))
	for i, o := range outcomes {
		batch[i] = success{ID: o.ID.String(), Token: o.Token.String(), Owner: o.Owner}
		if len(o.Result) > 0 {
			r := string(o.Result)
			batch[i].Result = &r
		}
		index[batch[i].ID] = i
		results[i] = store.FinishResult{Lost: true}
	}
	body, err := json.Marshal(batch)
	if err != nil {
		return nil, err
	}
	if err := loadBatch(ctx, tx, body); err != nil {
		return nil, fmt.Errorf("finish successes: %w", err)
	}
	rows, err := tx.QueryContext(ctx, finishSucceededBatchSQL, sql.Named("batch", string(body)),
		sql.Named("state", string(job.SucceededState)), sql.Named("now", tx.now), sql.Named("stamp", tx.stamp))
	if err != nil {
		return nil, fmt.Errorf("finish successes: %w", err)
	}
	defer rows.Close()
	var (
		events    []outboxEvent
		lastQueue string
	)
	for rows.Next() {
		var (
			id, queue string
			callback  bool
		)
		if err := rows.Scan(&id, &callback, &queue); err != nil {
			return nil, fmt.Errorf("finish successes: %w", err)
		}
		if queue != lastQueue {
			wake.left(queue)
			lastQueue = queue
		}
		i, ok := index[id]
		if !ok {
			return nil, fmt.Errorf("finish successes: job %s was not in the batch", id)
		}
		results[i] = store.FinishResult{State: job.SucceededState}
		if callback {
			events = append(events, outboxEvent{ID: id, Type: store.WebhookCallback})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("finish successes: %w", err)
	}
	if err := recordEvents(ctx, tx, events); err != nil {
		return nil, fmt.Errorf("finish successes: %w", err)
	}
	return results, nil
}

// finishRest applies, by the general path, the outcomes of a batch of
// successes that the hot statement did not apply (results[i].Lost): a
// workflow task's, or a lease lost indeed, which the general path
// reports lost again.
func (s *executor) finishRest(ctx context.Context, tx *jobWrite, wake *wakeups, outcomes []store.Outcome, results []store.FinishResult) error {
	var (
		rest  []store.Outcome
		index []int
	)
	for i, r := range results {
		if r.Lost {
			rest, index = append(rest, outcomes[i]), append(index, i)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	more, err := s.finish(ctx, tx, wake, rest)
	if err != nil {
		return err
	}
	for n, i := range index {
		results[i] = more[n]
	}
	return nil
}

// finish is the general path of JobFinish: read the facts of the jobs
// still held, decide, apply, and run the workflow step of the tasks it
// ended.
func (s *executor) finish(ctx context.Context, tx *jobWrite, wake *wakeups, outcomes []store.Outcome) ([]store.FinishResult, error) {
	type lease struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	leases := make([]lease, len(outcomes))
	for i, o := range outcomes {
		leases[i] = lease{ID: o.ID.String(), Token: o.Token.String()}
	}
	body, err := json.Marshal(leases)
	if err != nil {
		return nil, err
	}
	held, err := lockHeld(ctx, tx, lockHeldSQL, sql.Named("leases", string(body)), sql.Named("now", tx.now))
	if err != nil {
		return nil, fmt.Errorf("read held leases: %w", err)
	}
	decided, results, err := store.DecideFinish(outcomes, held, fromMicro(tx.now))
	if err != nil {
		return nil, err
	}
	if err := setStateIfRunning(ctx, tx, wake, decided); err != nil {
		return nil, err
	}
	if _, err := s.step(ctx, tx, wake, store.EndsOf(decided), nil); err != nil {
		return nil, fmt.Errorf("workflow step: %w", err)
	}
	return results, nil
}

// repeats tells, among the lost outcomes of the batch, the repeats of the
// outcome their rows remember (store.MarkRepeats), with one more read in
// the transaction, made only when an outcome was lost.
func repeats(ctx context.Context, tx *jobWrite, outcomes []store.Outcome, results []store.FinishResult) error {
	lost := store.LostLeases(outcomes, results)
	if len(lost) == 0 {
		return nil
	}
	type lease struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	leases := make([]lease, len(lost))
	for i, l := range lost {
		leases[i] = lease{ID: l.ID.String(), Token: l.Token.String()}
	}
	body, err := json.Marshal(leases)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, outcomeAcceptedSQL, sql.Named("leases", string(body)))
	if err != nil {
		return fmt.Errorf("read the outcomes remembered: %w", err)
	}
	defer rows.Close()
	var accepted []store.Accepted
	for rows.Next() {
		var (
			a                        store.Accepted
			id, token, status, state string
		)
		if err := rows.Scan(&id, &token, &status, &a.Owner, &state); err != nil {
			return fmt.Errorf("read the outcomes remembered: %w", err)
		}
		if a.ID, err = uuid.Parse(id); err != nil {
			return fmt.Errorf("job id %q: %w", id, err)
		}
		if a.Token, err = uuid.Parse(token); err != nil {
			return fmt.Errorf("outcome token of job %s: %w", id, err)
		}
		a.Status, a.State = store.OutcomeStatus(status), job.State(state)
		accepted = append(accepted, a)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the outcomes remembered: %w", err)
	}
	store.MarkRepeats(outcomes, results, accepted)
	return nil
}

// lockHeld runs query, lock_held.sql, lock_expired.sql or
// lock_timed_out.sql, which reads the facts of running jobs inside the
// write transaction; lock_timed_out.sql, which reads the jobs' timeouts
// too, is told by its text.
func lockHeld(ctx context.Context, tx *jobWrite, query string, args ...any) ([]store.Held, error) {
	withTimeout := query == lockTimedOutSQL
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var held []store.Held
	for rows.Next() {
		var (
			id, token, workflowID, parent string
			attemptedAt                   sql.NullInt64
			timeout                       sql.NullInt64
			h                             = store.Held{Facts: job.Facts{State: job.StateRunning}} // the statement's fence
		)
		dest := []any{&id, &token, &h.Queue, &h.Attempt, &h.MaxAttempts, &h.CancelRequested,
			&h.LeaseOwner, &attemptedAt, &workflowID, &h.Task.Ref, &parent}
		if withTimeout {
			dest = append(dest, &timeout)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		h.Timeout = time.Duration(timeout.Int64) * time.Microsecond
		h.AttemptedAt = fromNullMicro(attemptedAt)
		if h.ID, err = uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("job id %q: %w", id, err)
		}
		if h.Token, err = uuid.Parse(token); err != nil {
			return nil, fmt.Errorf("lease token of job %s: %w", id, err)
		}
		if workflowID != "" {
			if h.Task.WorkflowID, err = uuid.Parse(workflowID); err != nil {
				return nil, fmt.Errorf("workflow of job %s: %w", id, err)
			}
		}
		if parent != "" {
			if h.Task.Parent, err = uuid.Parse(parent); err != nil {
				return nil, fmt.Errorf("parent of job %s: %w", id, err)
			}
		}
		held = append(held, h)
	}
	return held, rows.Err()
}

// setStateIfRunning applies decided transitions out of running, each
// fenced by state running and its lease token, with the journal entries
// and attempted_at they decided, in one statement
// (set_state_if_running.sql), and the throttles they set, and notes the
// wake-ups they call for: of the jobs due again now, and of the queues
// whose room their ends freed (wakeups.left). The
// transaction holds the write lock since it read the facts, so every one
// applies; one that did not would be a bug, and fails the transaction.
func setStateIfRunning(ctx context.Context, tx *jobWrite, wake *wakeups, decided []store.Decided) error {
	if len(decided) == 0 {
		return nil
	}
	type change struct {
		ID          string          `json:"id"`
		Token       string          `json:"token"`
		State       string          `json:"state"`
		RunAt       *int64          `json:"run_at,omitempty"`
		Attempt     int             `json:"attempt"`
		FinishedAt  *int64          `json:"finished_at,omitempty"`
		Result      *string         `json:"result,omitempty"`
		LastError   *string         `json:"last_error,omitempty"`
		AttemptedAt *int64          `json:"attempted_at,omitempty"`
		Entries     json.RawMessage `json:"entries,omitempty"`
		Outcome     string          `json:"outcome,omitempty"`
	}
	batch := make([]change, len(decided))
	for i, d := range decided {
		c := change{ID: d.ID.String(), Token: d.Token.String(), State: string(d.State), Attempt: d.Attempt, LastError: d.LastError,
			RunAt: microOf(d.RunAt), FinishedAt: nullMicroOf(d.FinishedAt), AttemptedAt: nullMicroOf(d.AttemptedAt),
			Outcome: string(d.Outcome)}
		if len(d.Result) > 0 {
			r := string(d.Result)
			c.Result = &r
		}
		var err error
		if c.Entries, err = job.MarshalJournal(d.Events); err != nil {
			return fmt.Errorf("job %s: %w", d.ID, err)
		}
		batch[i] = c
	}
	body, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	if err := loadBatch(ctx, tx, body); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	rows, err := tx.QueryContext(ctx, setStateIfRunningSQL, sql.Named("batch", string(body)), sql.Named("stamp", tx.stamp))
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	var (
		n         int
		callbacks = make(map[string]bool)
	)
	for rows.Next() {
		var (
			id       string
			callback bool
		)
		if err := rows.Scan(&id, &callback); err != nil {
			rows.Close()
			return fmt.Errorf("apply: %w", err)
		}
		n++
		callbacks[id] = callback
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if n != len(decided) {
		return fmt.Errorf("apply: %d of %d held jobs changed", n, len(decided))
	}
	var events []outboxEvent
	for _, d := range decided {
		if d.State == job.StateQueued {
			wake.add(d.Queue, d.RunAt.UnixMicro())
		}
		wake.left(d.Queue)
		id := d.ID.String()
		if callbacks[id] {
			events = append(events, outboxEvent{ID: id, Type: store.WebhookCallback})
		}
		if d.Alert != "" {
			events = append(events, outboxEvent{ID: id, Type: d.Alert})
		}
	}
	if err := applyThrottles(ctx, tx, decided); err != nil {
		return err
	}
	return recordEvents(ctx, tx, events)
}

// outboxEvent is an event of a job this transaction changed, for
// recordEvents.
type outboxEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// recordEvents records events in the outbox, in order, in the
// transaction that made them (webhook_events_record.sql): nothing when
// there are none.
func recordEvents(ctx context.Context, tx *jobWrite, events []outboxEvent) error {
	if len(events) == 0 {
		return nil
	}
	body, err := json.Marshal(events)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, webhookEventsRecordSQL, sql.Named("events", string(body)), sql.Named("now", tx.now)); err != nil {
		return fmt.Errorf("record webhook events: %w", err)
	}
	return nil
}
