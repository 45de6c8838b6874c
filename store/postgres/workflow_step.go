package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// step is a decided workflow step (see store.WorkflowStore), applied in
// the last round of its transaction (queue, read): the transitions of
// the tasks it changes and of their workflows.
type step struct {
	tasks     []store.TaskDecided
	workflows []store.WorkflowDecided
	at        time.Time // the transaction's time
	// changed are the tasks as the apply left them, read back.
	changed []*job.Job
	// workflow is the workflow a retry changed, as it left it.
	workflow *job.Workflow
	// taskArgs and workflowArgs are the arguments of task_set_state.sql
	// and workflow_set.sql (prepare); nil: nothing to send.
	taskArgs, workflowArgs []any
}

// empty reports whether the step changes nothing.
func (st *step) empty() bool { return st == nil || len(st.tasks) == 0 && len(st.workflows) == 0 }

// lockStep runs the workflow step of ends, tasks this transaction ends
// (and own, the transitions of those it changes itself beside the lease
// holders', which their ends name), in one pinned round of r: it locks
// the tasks the ends may change (workflow_reach_lock.sql) and then their
// workflows (workflow_lock.sql), decides (store.DecidePropagate,
// store.DecideWorkflows) at at, and returns the step for the last round
// to apply. Without ends it sends nothing and returns nil: a batch
// without workflow tasks pays nothing.
//
// Then the children's step (lockParents) follows the ends of children
// (and of the tasks the workflow step canceled), in one more pinned
// round: their parents are locked after every other row.
func (s *executor) lockStep(ctx context.Context, r *rounds, ends []store.TaskEnd, own []store.TaskDecided, at time.Time) (*step, error) {
	if len(ends) == 0 {
		return nil, nil
	}
	st := &step{tasks: slices.Clone(own), at: at}
	all := ends
	if wf := store.WorkflowEnds(ends); len(wf) > 0 {
		tasks, workflows, cascade, err := s.lockWorkflowStep(ctx, r, wf, at)
		if err != nil {
			return nil, err
		}
		st.tasks, st.workflows = append(st.tasks, tasks...), workflows
		all = append(slices.Clone(ends), cascade...)
	}
	parents, err := s.lockParents(ctx, r, all, at)
	if err != nil {
		return nil, fmt.Errorf("children's step: %w", err)
	}
	st.tasks = append(st.tasks, parents...)
	return st, nil
}

// lockWorkflowStep is the workflow step of lockStep, for ends of
// workflow tasks: it returns the dependents' transitions, the workflows'
// and the ends of the tasks it canceled.
func (s *executor) lockWorkflowStep(ctx context.Context, r *rounds, ends []store.TaskEnd, at time.Time) ([]store.TaskDecided, []store.WorkflowDecided, []store.TaskEnd, error) {
	ids := make([][16]byte, len(ends))
	failing := make([]bool, len(ends))
	var workflows [][16]byte
	for i, e := range ends {
		ids[i], failing[i] = e.ID, e.State != job.StateSucceeded
		workflows = append(workflows, e.WorkflowID)
	}
	slices.SortFunc(workflows, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	workflows = slices.Compact(workflows)
	var (
		nodes []store.TaskNode
		edges []store.Edge
		wfs   []job.Workflow
	)
	err := r.pinnedRound(ctx, false, func(b *pgx.Batch) {
		b.Queue(workflowReachLockSQL, ids, failing)
		b.Queue(workflowLockSQL, workflows, s.now())
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("lock dependents: %w", err)
		}
		var parents []pgtype.UUID
		nodes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TaskNode, error) {
			n, err := scanTaskNode(row, &parents)
			for _, p := range parents {
				edges = append(edges, store.Edge{Task: n.ID, DependsOn: p.Bytes})
			}
			return n, err
		})
		if err != nil {
			return fmt.Errorf("lock dependents: %w", err)
		}
		if wfs, _, err = collectWorkflows(br); err != nil {
			return fmt.Errorf("lock workflows: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	tasks, cascade, err := store.DecidePropagate(ends, nodes, edges, at)
	if err != nil {
		return nil, nil, nil, err
	}
	all := append(slices.Clone(ends), cascade...)
	return tasks, store.DecideWorkflows(wfs, all, nil, at), cascade, nil
}

// scanTaskNode reads a task's facts as workflow_reach_lock.sql,
// workflow_tasks_lock_active.sql and workflow_plan.sql select them, and,
// when parents is not nil, the parents column after them.
func scanTaskNode(row pgx.Row, parents *[]pgtype.UUID) (store.TaskNode, error) {
	var (
		n                   store.TaskNode
		runOn, state, wait  string
		canceledBy, wfID    pgtype.UUID
		ref                 pgtype.Text
		timeout             *time.Duration
		attemptedAt, finish *time.Time
	)
	dest := []any{uuidDest(&n.ID), &wfID, &ref, &n.Queue, &runOn, &n.Pending, &n.RunAt,
		&canceledBy, &state, &n.Attempt, &n.MaxAttempts, &n.CancelRequested,
		&n.LeaseOwner, &attemptedAt, &finish, &n.Rerun, &timeout, &wait}
	if parents != nil {
		dest = append(dest, parents)
	}
	if err := row.Scan(dest...); err != nil {
		return n, err
	}
	n.WorkflowID, n.Ref, n.CanceledBy = wfID.Bytes, ref.String, canceledBy.Bytes
	n.RunOn, n.State, n.WaitFor = job.RunOn(runOn), job.State(state), job.WaitFor(wait)
	n.AttemptedAt, n.FinishedAt = attemptedAt, finish
	if timeout != nil {
		n.Timeout = *timeout
	}
	return n, nil
}

// workflowColumns are the columns every statement that returns
// workflows selects, in this order (scanWorkflow).
//
//	id, name, state, idempotency_key, tasks, succeeded, failed, canceled,
//	created_at, updated_at, finished_at
func scanWorkflow(row pgx.Row, extra ...any) (*job.Workflow, error) {
	var (
		w     job.Workflow
		state string
	)
	dest := append([]any{uuidDest(&w.ID), &w.Name, &state, &w.IdempotencyKey, &w.TaskCount, &w.Succeeded, &w.Failed,
		&w.Canceled, &w.CreatedAt, &w.UpdatedAt, &w.FinishedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	w.State = job.WorkflowState(state)
	return &w, nil
}

// collectWorkflows reads the next result of br, workflow_lock.sql's, as
// workflows and the transaction's time.
func collectWorkflows(br pgx.BatchResults) ([]job.Workflow, time.Time, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, time.Time{}, err
	}
	var at time.Time
	wfs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (job.Workflow, error) {
		w, err := scanWorkflow(row, &at)
		if err != nil {
			return job.Workflow{}, err
		}
		return *w, nil
	})
	return wfs, at, err
}

// queue adds the step's statements, which prepare made, to the last
// round's batch: task_set_state.sql for its tasks, workflow_set.sql for
// its workflows.
func (st *step) queue(b *pgx.Batch) {
	if st == nil {
		return
	}
	if st.taskArgs != nil {
		b.Queue(taskSetStateSQL, st.taskArgs...)
	}
	if st.workflowArgs != nil {
		b.Queue(workflowSetSQL, st.workflowArgs...)
	}
}

// prepare makes the arguments of the step's statements, at now.
func (st *step) prepare(now *time.Time) error {
	if st.empty() {
		return nil
	}
	if n := len(st.tasks); n > 0 {
		var (
			ids, canceledBy                     = make([][16]byte, n), make([]*[16]byte, n)
			froms, states, waitFors, lastErrors = make([]string, n), make([]string, n), make([]*string, n), make([]*string, n)
			runAts, finishedAts, attemptedAts   = make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
			attempts, pendings                  = make([]int32, n), make([]int32, n)
			cancels, stops                      = make([]bool, n), make([]bool, n)
			entries                             = make([]json.RawMessage, n)
		)
		for i, d := range st.tasks {
			ids[i], froms[i], states[i] = d.ID, string(d.From), string(d.State)
			runAts[i], attempts[i], cancels[i] = timePtr(d.RunAt), int32(d.Attempt), d.CancelRequested
			finishedAts[i], lastErrors[i], attemptedAts[i], stops[i] = d.FinishedAt, d.LastError, d.AttemptedAt, d.RequestsCancel()
			if tc := d.Task; tc != nil {
				waitFors[i], pendings[i] = nullText(string(tc.WaitFor)), int32(tc.Pending)
				if tc.CanceledBy != uuid.Nil {
					id := pgUUID(tc.CanceledBy)
					canceledBy[i] = &id
				}
			}
			var err error
			if entries[i], err = job.MarshalJournal(d.Events); err != nil {
				return fmt.Errorf("task %s: %w", d.ID, err)
			}
		}
		st.taskArgs = []any{now, ids, froms, states, runAts, attempts, cancels, finishedAts, lastErrors,
			attemptedAts, entries, waitFors, pendings, canceledBy, stops}
	}
	if n := len(st.workflows); n > 0 {
		var (
			ids                          = make([][16]byte, n)
			states                       = make([]string, n)
			succeeded, failed, cancelled = make([]int32, n), make([]int32, n), make([]int32, n)
			finishedAts                  = make([]*time.Time, n)
			entries                      = make([]json.RawMessage, n)
			finished                     = make([]bool, n)
		)
		for i, w := range st.workflows {
			ids[i], states[i], finishedAts[i], finished[i] = w.ID, string(w.State), w.FinishedAt, w.Finished
			succeeded[i], failed[i], cancelled[i] = int32(w.Counts.Succeeded), int32(w.Counts.Failed), int32(w.Counts.Canceled)
			var err error
			if entries[i], err = job.MarshalWorkflowJournal(w.Events); err != nil {
				return fmt.Errorf("workflow %s: %w", w.ID, err)
			}
		}
		st.workflowArgs = []any{now, ids, states, succeeded, failed, cancelled, finishedAts, entries, finished}
	}
	return nil
}

// read reads the results of the statements queue added, in order. Every
// row was locked by this transaction, so every one applies; one that did
// not would be a bug, and fails the transaction.
func (st *step) read(br pgx.BatchResults) error {
	if st.empty() {
		return nil
	}
	if len(st.tasks) > 0 {
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("apply tasks: %w", err)
		}
		if st.changed, err = scanJobs(rows); err != nil {
			return fmt.Errorf("apply tasks: %w", err)
		}
		if len(st.changed) != len(st.tasks) {
			return fmt.Errorf("apply tasks: %d of %d locked tasks changed", len(st.changed), len(st.tasks))
		}
	}
	if len(st.workflows) > 0 {
		var n int
		if err := br.QueryRow().Scan(&n); err != nil {
			return fmt.Errorf("apply workflows: %w", err)
		}
		if n != len(st.workflows) {
			return fmt.Errorf("apply workflows: %d of %d locked workflows changed", n, len(st.workflows))
		}
	}
	return nil
}

// changedJob returns the task id as the step left it, or nil.
func (st *step) changedJob(id uuid.UUID) *job.Job {
	if st == nil {
		return nil
	}
	for _, j := range st.changed {
		if j.ID == id {
			return j
		}
	}
	return nil
}

// wakeLater arranges, once the step committed, a wake-up for the queues
// of the tasks it queued due later (a release that keeps a task's own
// later run_at). Those due now were woken by the statement itself.
func (s *executor) wakeStepLater(st *step) {
	if st == nil {
		return
	}
	for _, d := range st.tasks {
		if d.State == job.StateQueued && d.RunAt.After(st.at) {
			s.delayed.At(d.Queue, d.RunAt)
		}
	}
}

// applyStep applies st alone, in the last round of r (COMMIT travels
// with it in a transaction of its own).
func (s *executor) applyStep(ctx context.Context, r *rounds, now *time.Time, st *step) error {
	if err := st.prepare(now); err != nil {
		return err
	}
	err := r.pinnedRound(ctx, true, st.queue, st.read)
	if err != nil {
		return err
	}
	s.afterCommit(func() { s.wakeStepLater(st) })
	return nil
}
