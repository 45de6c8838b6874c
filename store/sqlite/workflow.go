package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// WorkflowSubmit inserts a workflow and its tasks in one write
// transaction, the tasks each after its dependencies with ids in that
// order. See store.WorkflowStore.
func (s *executor) WorkflowSubmit(ctx context.Context, params store.WorkflowSubmitParams) (*store.WorkflowSubmitResult, error) {
	p := params.WorkflowParams
	p.Tasks = slices.Clone(p.Tasks)
	order, err := p.Normalize(s.maxArgs, params.MaxTasks)
	if err != nil {
		return nil, errorf("sqlite: submit workflow: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, errorf("sqlite: submit workflow: new id: %w", err)
	}
	ids := make([]uuid.UUID, len(p.Tasks))
	for i := range ids {
		if ids[i], err = uuid.NewV7(); err != nil {
			return nil, errorf("sqlite: submit workflow: new id: %w", err)
		}
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	var (
		res  *store.WorkflowSubmitResult
		wake *wakeups
	)
	err = s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		w, err := scanWorkflow(tx.QueryRowContext(ctx, workflowInsertSQL, sql.Named("id", id.String()),
			sql.Named("name", p.Name), sql.Named("key", p.IdempotencyKey), sql.Named("fingerprint", p.IdempotencyFingerprint),
			sql.Named("tasks", len(p.Tasks)), sql.Named("now", tx.now)))
		if errors.Is(err, job.ErrNotFound) {
			res, err = submitTwin(ctx, tx, &p)
			return err
		}
		if err != nil {
			return fmt.Errorf("insert the workflow: %w", err)
		}
		res = &store.WorkflowSubmitResult{Workflow: w, Tasks: make([]*job.Job, len(p.Tasks)), Created: true}
		return insertTasks(ctx, tx, wake, &p, order, ids, w.ID, res.Tasks)
	})
	if err != nil {
		return nil, errorf("sqlite: submit workflow: %w", err)
	}
	s.send(wake)
	return res, nil
}

// insertTasks inserts the tasks of p in order, with ids, and their
// edges, into tasks (in the params' order), noting the wake-ups of those
// queued.
func insertTasks(ctx context.Context, tx *jobWrite, wake *wakeups, p *job.WorkflowParams, order []int, ids []uuid.UUID, workflow uuid.UUID, tasks []*job.Job) error {
	ins, err := tx.PrepareContext(ctx, taskInsertSQL)
	if err != nil {
		return err
	}
	defer ins.Close()
	edge, err := tx.PrepareContext(ctx, edgeInsertSQL)
	if err != nil {
		return err
	}
	defer edge.Close()
	idOf := make(map[string]string, len(p.Tasks))
	for n, i := range order {
		t := &p.Tasks[i]
		id := ids[n].String()
		idOf[t.Ref] = id
		runAt := tx.now
		if !t.RunAt.IsZero() {
			runAt = t.RunAt.UnixMicro()
		}
		j, err := scanJob(ins.QueryRowContext(ctx,
			sql.Named("id", id),
			sql.Named("queue", t.Queue),
			sql.Named("kind", t.Kind),
			sql.Named("args", string(t.Args)),
			sql.Named("priority", *t.Priority),
			sql.Named("run_at", runAt),
			sql.Named("max_attempts", t.MaxAttempts),
			sql.Named("lease_ttl_us", t.LeaseTTL.Microseconds()),
			sql.Named("lock_key", t.LockKey),
			sql.Named("partition_key", t.PartitionKey),
			sql.Named("requires", listJSON(t.Requires)),
			sql.Named("prefers", listJSON(t.Prefers)),
			sql.Named("trace_parent", t.TraceParent),
			sql.Named("timeout_us", nullMicros(t.Timeout)),
			sql.Named("schedule", t.Schedule),
			sql.Named("scheduled_for", microOf(t.ScheduledFor)),
			sql.Named("callback_url", t.CallbackURL),
			sql.Named("workflow_id", workflow.String()),
			sql.Named("ref", t.Ref),
			sql.Named("run_on", string(t.RunOn)),
			sql.Named("dependencies", len(t.DependsOn)),
			sql.Named("now", tx.now),
			sql.Named("stamp", tx.stamp),
		))
		if err != nil {
			return fmt.Errorf("insert task %q: %w", t.Ref, err)
		}
		for _, d := range t.DependsOn {
			if _, err := edge.ExecContext(ctx, sql.Named("job_id", id), sql.Named("depends_on", idOf[d])); err != nil {
				return fmt.Errorf("insert the edges of task %q: %w", t.Ref, err)
			}
		}
		if j.State == job.StateQueued {
			wake.inserted(j.Queue, j.Priority, runAt)
		}
		tasks[i] = j
	}
	return nil
}

// submitTwin returns the retained workflow whose idempotency key made
// p's insert skip its row, with its tasks; job.ErrIdempotencyMismatch
// when another request made it. The write lock is held: it is there.
func submitTwin(ctx context.Context, tx *jobWrite, p *job.WorkflowParams) (*store.WorkflowSubmitResult, error) {
	var fingerprint string
	w, err := scanWorkflow(prefixed{tx.QueryRowContext(ctx, workflowLookupSQL, sql.Named("key", p.IdempotencyKey)), &fingerprint})
	if err != nil {
		return nil, fmt.Errorf("find the workflow of the idempotency key: %w", err)
	}
	if fingerprint != "" && fingerprint != p.IdempotencyFingerprint {
		return nil, job.ErrIdempotencyMismatch
	}
	rows, err := tx.QueryContext(ctx, workflowTasksSQL, sql.Named("id", w.ID.String()))
	if err != nil {
		return nil, err
	}
	tasks, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	return &store.WorkflowSubmitResult{Workflow: w, Tasks: tasks}, nil
}

// WorkflowGet returns a workflow with its tasks, edges, counts and
// journal, read in one read transaction. See store.WorkflowStore.
func (s *executor) WorkflowGet(ctx context.Context, id uuid.UUID) (*store.WorkflowDetail, error) {
	var d *store.WorkflowDetail
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var journal sql.NullString
		w, err := scanWorkflow(tx.QueryRowContext(ctx, workflowGetSQL, sql.Named("id", id.String())), &journal)
		if err != nil {
			return err
		}
		stored, err := job.ParseWorkflowJournal([]byte(journal.String))
		if err != nil {
			return err
		}
		d = &store.WorkflowDetail{Workflow: *w, Events: job.WorkflowJournal(w, stored)}
		rows, err := tx.QueryContext(ctx, workflowTasksSQL, sql.Named("id", id.String()))
		if err != nil {
			return err
		}
		if d.Tasks, err = scanJobs(rows); err != nil {
			return err
		}
		d.Edges, err = readEdges(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: get workflow %s: %w", id, err)
	}
	d.Counts = store.CountTasks(d.Tasks)
	return d, nil
}

// readEdges reads the edges of workflow id.
func readEdges(ctx context.Context, q queryer, id uuid.UUID) ([]store.Edge, error) {
	rows, err := q.QueryContext(ctx, workflowEdgesSQL, sql.Named("id", id.String()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var edges []store.Edge
	for rows.Next() {
		var task, dep string
		if err := rows.Scan(&task, &dep); err != nil {
			return nil, err
		}
		e := store.Edge{}
		var err error
		if e.Task, err = uuid.Parse(task); err != nil {
			return nil, err
		}
		if e.DependsOn, err = uuid.Parse(dep); err != nil {
			return nil, err
		}
		edges = append(edges, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(edges, func(a, b store.Edge) int {
		if c := slices.Compare(a.Task[:], b.Task[:]); c != 0 {
			return c
		}
		return slices.Compare(a.DependsOn[:], b.DependsOn[:])
	})
	return edges, nil
}

// WorkflowList returns a page of workflows, newest first, and the count
// of matches. See store.WorkflowStore.
func (s *executor) WorkflowList(ctx context.Context, params store.WorkflowListParams) (*store.WorkflowListResult, error) {
	if err := store.CheckWorkflowList(params); err != nil {
		return nil, err
	}
	states := ""
	if len(params.States) > 0 {
		b, err := json.Marshal(params.States)
		if err != nil {
			return nil, err
		}
		states = string(b)
	}
	after := ""
	if params.After != nil {
		after = params.After.String()
	}
	res := &store.WorkflowListResult{Total: -1, Workflows: []*job.Workflow{}}
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		filters := []any{sql.Named("name", params.Name), sql.Named("states", states)}
		if !params.NoTotal {
			if err := tx.QueryRowContext(ctx, workflowCountSQL, filters...).Scan(&res.Total); err != nil {
				return err
			}
		}
		if params.Limit == 0 {
			return nil
		}
		rows, err := tx.QueryContext(ctx, workflowListSQL, append(filters, sql.Named("after", after), sql.Named("limit", params.Limit))...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			w, err := scanWorkflow(rows)
			if err != nil {
				return err
			}
			res.Workflows = append(res.Workflows, w)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, errorf("sqlite: list workflows: %w", err)
	}
	return res, nil
}

// WorkflowCancel cancels the tasks of a workflow that are not final, in
// one write transaction (store.DecideCancel). See store.WorkflowStore.
func (s *executor) WorkflowCancel(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	var (
		w    *job.Workflow
		wake *wakeups
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		wfs, err := readWorkflows(ctx, tx, []uuid.UUID{id})
		if err != nil {
			return err
		}
		w = &wfs[0]
		if w.State.Final() {
			return fmt.Errorf("workflow is %s: %w", w.State, job.ErrWrongState)
		}
		nodes, err := readNodes(ctx, tx, workflowTasksActiveSQL, id)
		if err != nil {
			return err
		}
		at := fromMicro(tx.now)
		tasks, ends, err := store.DecideCancel(nodes, at)
		if err != nil || len(tasks) == 0 {
			return err
		}
		events := map[uuid.UUID][]job.WorkflowEvent{id: {{Kind: job.WorkflowEventCancelRequested, At: at}}}
		decided := store.DecideWorkflows(wfs, ends, events, at)
		w = changedWorkflow(w, decided)
		_, err = s.applyStep(ctx, tx, wake, tasks, decided)
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: cancel workflow %s: %w", id, err)
	}
	s.send(wake)
	return w, nil
}

// readNodes reads task facts by query (workflow_tasks_active.sql,
// workflow_plan.sql) of workflow id.
func readNodes(ctx context.Context, tx *jobWrite, query string, id uuid.UUID) ([]store.TaskNode, error) {
	rows, err := tx.QueryContext(ctx, query, sql.Named("id", id.String()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var nodes []store.TaskNode
	for rows.Next() {
		n, err := scanTaskNode(rows, nil)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, rows.Err()
}

// WorkflowRetry retries the failed and canceled tasks of a workflow. See
// store.WorkflowStore and retryTasks.
func (s *executor) WorkflowRetry(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	var (
		w    *job.Workflow
		wake *wakeups
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		var err error
		w, _, err = s.retryTasks(ctx, tx, wake, id, nil, []job.WorkflowEvent{{Kind: job.WorkflowEventRetried}})
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: retry workflow %s: %w", id, err)
	}
	s.send(wake)
	return w, nil
}

// retryTasks retries tasks retry of workflow id (nil: every failed or
// canceled one) in the write transaction (store.DecideRetry), with events
// in its journal (their times set to the transaction's), and returns the
// workflow and the tasks as the retry left them.
func (s *executor) retryTasks(ctx context.Context, tx *jobWrite, wake *wakeups, id uuid.UUID, retry []uuid.UUID, events []job.WorkflowEvent) (*job.Workflow, []*job.Job, error) {
	var (
		plan store.RetryPlan
		err  error
	)
	if plan.Tasks, err = readNodes(ctx, tx, workflowPlanSQL, id); err != nil {
		return nil, nil, fmt.Errorf("read the workflow: %w", err)
	}
	if len(plan.Tasks) == 0 {
		return nil, nil, job.ErrNotFound
	}
	if plan.Edges, err = readEdges(ctx, tx, id); err != nil {
		return nil, nil, fmt.Errorf("read the workflow: %w", err)
	}
	if retry == nil {
		if retry = plan.RetryableTasks(); len(retry) == 0 {
			return nil, nil, fmt.Errorf("no task of the workflow is failed or canceled: %w", job.ErrWrongState)
		}
	}
	wfs, err := readWorkflows(ctx, tx, []uuid.UUID{id})
	if err != nil {
		return nil, nil, err
	}
	at := fromMicro(tx.now)
	tasks, ends, err := store.DecideRetry(plan, retry, at)
	if err != nil {
		return nil, nil, err
	}
	for i := range events {
		events[i].At = at
	}
	decided := store.DecideWorkflows(wfs, ends, map[uuid.UUID][]job.WorkflowEvent{id: events}, at)
	changed, err := s.applyStep(ctx, tx, wake, tasks, decided)
	if err != nil {
		return nil, nil, err
	}
	return changedWorkflow(&wfs[0], decided), changed, nil
}

// changedWorkflow returns w as the decided changes leave it.
func changedWorkflow(w *job.Workflow, decided []store.WorkflowDecided) *job.Workflow {
	out := *w
	for _, d := range decided {
		if d.ID == w.ID {
			out.State, out.FinishedAt = d.State, d.FinishedAt
			out.Succeeded, out.Failed, out.Canceled = d.Counts.Succeeded, d.Counts.Failed, d.Counts.Canceled
		}
	}
	return &out
}

// pruneWorkflows deletes the finished workflows whose finished_at is
// before before, oldest first, with their tasks and edges, at most limit
// tasks' worth (and at least one workflow), in the write transaction,
// and returns how many tasks it deleted.
func pruneWorkflows(ctx context.Context, tx *sql.Tx, before int64, limit int) (int, error) {
	rows, err := tx.QueryContext(ctx, workflowPruneSQL, sql.Named("before", before), sql.Named("limit", limit))
	if err != nil {
		return 0, err
	}
	var (
		ids   []string
		total int
	)
	for rows.Next() {
		var (
			id string
			n  int
		)
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return 0, err
		}
		if len(ids) > 0 && total+n > limit {
			break
		}
		ids, total = append(ids, id), total+n
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	tasks := 0
	for _, id := range ids {
		n, err := deleteWorkflow(ctx, tx, id)
		if err != nil {
			return 0, err
		}
		tasks += n
	}
	return tasks, nil
}

// deleteWorkflow deletes workflow id's edges, tasks and row, and returns
// how many tasks it deleted.
func deleteWorkflow(ctx context.Context, tx *sql.Tx, id string) (int, error) {
	if _, err := tx.ExecContext(ctx, workflowDeleteEdgesSQL, sql.Named("id", id)); err != nil {
		return 0, err
	}
	n, err := deleteJobs(ctx, tx, workflowDeleteTasksSQL, sql.Named("id", id))
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, workflowDeleteSQL, sql.Named("id", id)); err != nil {
		return 0, err
	}
	return n, nil
}

// WorkflowDelete deletes a finished workflow with its tasks and edges, in
// one write transaction. See store.WorkflowStore.
func (s *executor) WorkflowDelete(ctx context.Context, id uuid.UUID) (int, error) {
	var n int
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wfs, err := readWorkflows(ctx, tx, []uuid.UUID{id})
		if err != nil {
			return err
		}
		if !wfs[0].State.Final() {
			return fmt.Errorf("workflow is running: %w", job.ErrWrongState)
		}
		n, err = deleteWorkflow(ctx, tx.Tx, id.String())
		return err
	})
	if err != nil {
		return 0, errorf("sqlite: delete workflow %s: %w", id, err)
	}
	return n, nil
}
