package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The workflow step (see store.WorkflowStore), in the write transaction
// of the tasks' ends, which holds the file's one write lock: nothing
// changes the rows it reads before it writes.

// step runs the workflow step of ends, tasks this transaction ends (and
// own, the transitions of those it changes itself beside the lease
// holders', which their ends name), at the transaction's time: it reads
// the tasks the ends may change (workflow_reach.sql) and their
// workflows, decides (store.DecidePropagate, store.DecideWorkflows) and
// applies, noting the wake-ups. It returns the tasks it changed, as they
// now are. Without ends it reads nothing: a batch without workflow tasks
// pays nothing.
//
// Then the children's step (parentStep) follows the ends of children
// (and of the tasks the workflow step canceled), after every change of
// the workflow step is applied.
func (s *executor) step(ctx context.Context, tx *jobWrite, wake *wakeups, ends []store.TaskEnd, own []store.TaskDecided) ([]*job.Job, error) {
	if len(ends) == 0 {
		return nil, nil
	}
	var (
		changed []*job.Job
		err     error
	)
	if wf := store.WorkflowEnds(ends); len(wf) > 0 {
		var cascade []store.TaskEnd
		if changed, cascade, err = s.workflowStep(ctx, tx, wake, wf, own); err != nil {
			return nil, err
		}
		ends = append(slices.Clone(ends), cascade...)
	} else if changed, err = s.applyStep(ctx, tx, wake, own, nil); err != nil {
		return nil, err
	}
	parents, err := s.parentStep(ctx, tx, wake, ends)
	if err != nil {
		return nil, fmt.Errorf("children's step: %w", err)
	}
	return append(changed, parents...), nil
}

// workflowStep is the workflow step of step, for ends of workflow tasks;
// it returns the ends of the tasks it canceled besides.
func (s *executor) workflowStep(ctx context.Context, tx *jobWrite, wake *wakeups, ends []store.TaskEnd, own []store.TaskDecided) ([]*job.Job, []store.TaskEnd, error) {
	type end struct {
		ID      string `json:"id"`
		Failing int    `json:"failing"`
	}
	batch := make([]end, len(ends))
	var workflows []uuid.UUID
	seen := make(map[uuid.UUID]bool)
	for i, e := range ends {
		batch[i] = end{ID: e.ID.String()}
		if e.State != job.StateSucceeded {
			batch[i].Failing = 1
		}
		if !seen[e.WorkflowID] {
			seen[e.WorkflowID] = true
			workflows = append(workflows, e.WorkflowID)
		}
	}
	body, err := json.Marshal(batch)
	if err != nil {
		return nil, nil, err
	}
	rows, err := tx.QueryContext(ctx, workflowReachSQL, sql.Named("ends", string(body)))
	if err != nil {
		return nil, nil, fmt.Errorf("read dependents: %w", err)
	}
	var (
		nodes []store.TaskNode
		edges []store.Edge
		read  = make(map[uuid.UUID]bool)
	)
	for rows.Next() {
		var parent string
		n, err := scanTaskNode(rows, &parent)
		if err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read dependents: %w", err)
		}
		p, err := uuid.Parse(parent)
		if err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read dependents: a dependency of %s: %w", n.ID, err)
		}
		edges = append(edges, store.Edge{Task: n.ID, DependsOn: p})
		if !read[n.ID] {
			read[n.ID] = true
			nodes = append(nodes, n)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, nil, fmt.Errorf("read dependents: %w", err)
	}
	wfs, err := readWorkflows(ctx, tx, workflows)
	if err != nil {
		return nil, nil, err
	}
	at := fromMicro(tx.now)
	tasks, cascade, err := store.DecidePropagate(ends, nodes, edges, at)
	if err != nil {
		return nil, nil, err
	}
	all := append(append([]store.TaskEnd{}, ends...), cascade...)
	changed, err := s.applyStep(ctx, tx, wake, append(append([]store.TaskDecided{}, own...), tasks...), store.DecideWorkflows(wfs, all, nil, at))
	return changed, cascade, err
}

// readWorkflows reads the rows of workflows ids, in the write
// transaction.
func readWorkflows(ctx context.Context, tx *jobWrite, ids []uuid.UUID) ([]job.Workflow, error) {
	wfs := make([]job.Workflow, 0, len(ids))
	for _, id := range ids {
		w, err := scanWorkflow(tx.QueryRowContext(ctx, workflowReadSQL, sql.Named("id", id.String())))
		if err != nil {
			return nil, fmt.Errorf("read workflow %s: %w", id, err)
		}
		wfs = append(wfs, *w)
	}
	return wfs, nil
}

// applyStep writes decided transitions of tasks (task_set_state.sql)
// and workflows (workflow_set.sql), with the outbox events they record
// (a callback of a task made final, workflow.finished), and notes the
// wake-ups of the tasks queued again and the cancel requests to send
// once the transaction commits. It returns the tasks as they now are.
func (s *executor) applyStep(ctx context.Context, tx *jobWrite, wake *wakeups, tasks []store.TaskDecided, workflows []store.WorkflowDecided) ([]*job.Job, error) {
	var (
		changed []*job.Job
		events  []outboxEvent
		stop    []uuid.UUID
	)
	for _, d := range tasks {
		j, err := setTaskState(ctx, tx, d)
		if err != nil {
			return nil, err
		}
		changed = append(changed, j)
		if j.State == job.StateQueued {
			wake.add(j.Queue, j.RunAt.UnixMicro())
		}
		if j.FinishedAt != nil && j.CallbackURL != "" {
			events = append(events, outboxEvent{ID: j.ID.String(), Type: store.WebhookCallback})
		}
		if d.RequestsCancel() {
			stop = append(stop, j.ID)
		}
	}
	if err := recordEvents(ctx, tx, events); err != nil {
		return nil, err
	}
	for _, w := range workflows {
		if err := setWorkflow(ctx, tx, w); err != nil {
			return nil, err
		}
	}
	if len(stop) > 0 {
		s.afterCommit(func() {
			for _, id := range stop {
				s.hub.Send(store.Notification{CancelJob: id})
			}
		})
	}
	return changed, nil
}

// setTaskState applies one decided transition of a task, fenced by the
// state it was decided from.
func setTaskState(ctx context.Context, tx *jobWrite, d store.TaskDecided) (*job.Job, error) {
	entries, err := job.MarshalJournal(d.Events)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", d.ID, err)
	}
	var (
		waitFor, canceledBy any
		pending             any
	)
	if tc := d.Task; tc != nil {
		if tc.WaitFor != "" {
			waitFor = string(tc.WaitFor)
		}
		pending = tc.Pending
		if tc.CanceledBy != uuid.Nil {
			canceledBy = tc.CanceledBy.String()
		}
	}
	j, err := scanJob(tx.QueryRowContext(ctx, taskSetStateSQL,
		sql.Named("id", d.ID.String()),
		sql.Named("from", string(d.From)),
		sql.Named("state", string(d.State)),
		sql.Named("run_at", microOf(d.RunAt)),
		sql.Named("attempt", d.Attempt),
		sql.Named("cancel_requested", d.CancelRequested),
		sql.Named("finished_at", nullMicroOf(d.FinishedAt)),
		sql.Named("last_error", d.LastError),
		sql.Named("attempted_at", nullMicroOf(d.AttemptedAt)),
		sql.Named("entries", nullJSON(entries)),
		sql.Named("wait_for", waitFor),
		sql.Named("pending", pending),
		sql.Named("canceled_by", canceledBy),
		sql.Named("stamp", tx.stamp),
	))
	if errors.Is(err, job.ErrNotFound) {
		return nil, fmt.Errorf("task %s changed under the write lock", d.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("apply task %s: %w", d.ID, err)
	}
	return j, nil
}

// setWorkflow applies one decided change of a workflow, and records its
// workflow.finished event when it ended.
func setWorkflow(ctx context.Context, tx *jobWrite, w store.WorkflowDecided) error {
	entries, err := job.MarshalWorkflowJournal(w.Events)
	if err != nil {
		return fmt.Errorf("workflow %s: %w", w.ID, err)
	}
	res, err := tx.ExecContext(ctx, workflowSetSQL,
		sql.Named("id", w.ID.String()),
		sql.Named("state", string(w.State)),
		sql.Named("succeeded", w.Counts.Succeeded),
		sql.Named("failed", w.Counts.Failed),
		sql.Named("canceled", w.Counts.Canceled),
		sql.Named("finished_at", nullMicroOf(w.FinishedAt)),
		sql.Named("entries", nullJSON(entries)),
		sql.Named("now", tx.now),
	)
	if err != nil {
		return fmt.Errorf("apply workflow %s: %w", w.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("apply workflow %s: %d rows changed (%v)", w.ID, n, err)
	}
	if w.Finished {
		if _, err := tx.ExecContext(ctx, workflowEventRecordSQL, sql.Named("id", w.ID.String()), sql.Named("now", tx.now)); err != nil {
			return fmt.Errorf("record workflow.finished of %s: %w", w.ID, err)
		}
	}
	return nil
}

// scanTaskNode reads a task's facts as workflow_reach.sql,
// workflow_tasks_active.sql and workflow_plan.sql select them, and the
// parents column after them when parents is not nil.
func scanTaskNode(sc scanner, parents *string) (store.TaskNode, error) {
	var (
		n                                  store.TaskNode
		id, runOn, state, wait             string
		wfID, ref, canceledBy              sql.NullString
		runAt                              int64
		attemptedAt, finishedAt, timeoutUS sql.NullInt64
	)
	dest := []any{&id, &wfID, &ref, &n.Queue, &runOn, &n.Pending, &runAt, &canceledBy, &state, &n.Attempt,
		&n.MaxAttempts, &n.CancelRequested, &n.LeaseOwner, &attemptedAt, &finishedAt, &n.Rerun, &timeoutUS, &wait}
	if parents != nil {
		dest = append(dest, parents)
	}
	if err := sc.Scan(dest...); err != nil {
		return n, err
	}
	var err error
	if n.ID, err = uuid.Parse(id); err != nil {
		return n, fmt.Errorf("task id %q: %w", id, err)
	}
	if n.WorkflowID, err = uuid.Parse(wfID.String); err != nil {
		return n, fmt.Errorf("workflow of task %s: %w", id, err)
	}
	if canceledBy.Valid {
		if n.CanceledBy, err = uuid.Parse(canceledBy.String); err != nil {
			return n, fmt.Errorf("canceled_by of task %s: %w", id, err)
		}
	}
	n.Ref, n.RunOn, n.State, n.WaitFor = ref.String, job.RunOn(runOn), job.State(state), job.WaitFor(wait)
	n.RunAt, n.AttemptedAt, n.FinishedAt = fromMicro(runAt), fromNullMicro(attemptedAt), fromNullMicro(finishedAt)
	n.Timeout = time.Duration(timeoutUS.Int64) * time.Microsecond
	return n, nil
}

// scanWorkflow reads a workflow as every statement that returns
// workflows selects it (id, name, state, idempotency_key, tasks,
// succeeded, failed, canceled, created_at, updated_at, finished_at),
// then extra.
func scanWorkflow(sc scanner, extra ...any) (*job.Workflow, error) {
	var (
		w                    job.Workflow
		id, state            string
		createdAt, updatedAt int64
		finishedAt           sql.NullInt64
	)
	dest := append([]any{&id, &w.Name, &state, &w.IdempotencyKey, &w.TaskCount, &w.Succeeded, &w.Failed, &w.Canceled,
		&createdAt, &updatedAt, &finishedAt}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return nil, notFound(err)
	}
	var err error
	if w.ID, err = uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("workflow id %q: %w", id, err)
	}
	w.State = job.WorkflowState(state)
	w.CreatedAt, w.UpdatedAt, w.FinishedAt = fromMicro(createdAt), fromMicro(updatedAt), fromNullMicro(finishedAt)
	return &w, nil
}

// readInputs sets the Inputs of the claimed tasks among jobs that have
// dependencies (task_inputs.sql), in the claim's write transaction; jobs
// outside workflows cost nothing.
func readInputs(ctx context.Context, tx *jobWrite, jobs []*job.Job) error {
	for _, j := range jobs {
		if j.WorkflowID == uuid.Nil || j.Dependencies == 0 {
			continue
		}
		rows, err := tx.QueryContext(ctx, taskInputsSQL, sql.Named("id", j.ID.String()))
		if err != nil {
			return fmt.Errorf("inputs of task %s: %w", j.ID, err)
		}
		j.Inputs = make(map[string]job.Input, j.Dependencies)
		for rows.Next() {
			var (
				ref, state, errText string
				result              sql.NullString
			)
			if err := rows.Scan(&ref, &state, &result, &errText); err != nil {
				rows.Close()
				return fmt.Errorf("inputs of task %s: %w", j.ID, err)
			}
			j.Inputs[ref] = job.Input{State: job.State(state), Result: rawJSON(result), Error: errText}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("inputs of task %s: %w", j.ID, err)
		}
	}
	return nil
}
