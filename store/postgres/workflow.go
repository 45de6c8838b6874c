package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// WorkflowSubmit inserts a workflow and its tasks in one transaction: in
// one round trip for a workflow without an idempotency key (its row, its
// tasks and edges, BEGIN and COMMIT together); with a key, a second one
// commits, or finds the twin the key names. See store.WorkflowStore.
func (s *executor) WorkflowSubmit(ctx context.Context, params store.WorkflowSubmitParams) (*store.WorkflowSubmitResult, error) {
	p := params.WorkflowParams
	p.Tasks = slices.Clone(p.Tasks)
	order, err := p.Normalize(s.maxArgs, params.MaxTasks)
	if err != nil {
		return nil, errorf("postgres: submit workflow: %w", err)
	}
	plan, err := newSubmitPlan(&p, order)
	if err != nil {
		return nil, errorf("postgres: submit workflow: %w", err)
	}
	for try := 0; ; try++ {
		var res *store.WorkflowSubmitResult
		err := s.transact(ctx, func(r *rounds) error {
			r.readCommitted()
			var err error
			res, err = s.submit(ctx, r, &p, plan)
			return err
		})
		switch {
		case errors.Is(err, errTwinGone) && try < insertRounds:
			continue
		case err != nil:
			return nil, errorf("postgres: submit workflow: %w", err)
		}
		if res.Created {
			s.afterCommit(func() {
				for _, j := range res.Tasks {
					if j.State == job.StateQueued && j.RunAt.After(j.CreatedAt) {
						s.delayed.At(j.Queue, j.RunAt)
					}
				}
			})
		}
		return res, nil
	}
}

// errTwinGone: the workflow an idempotency key named was pruned between
// the insert that met it and the lookup; the submission is tried again.
var errTwinGone = errors.New("the workflow of the idempotency key is gone")

// submitPlan is a normalised workflow as its insert's arrays: its id, its
// tasks' (ids in an order where each comes after its dependencies) and
// its edges.
type submitPlan struct {
	id                 uuid.UUID
	tasks              insertBatch
	refs, runOns       []string
	deps               []int32
	index              []int // the params' index of each task of the batch
	edgeJobs, edgeDeps [][16]byte
}

// newSubmitPlan makes the insert's arrays of p, whose tasks order lists
// each after its dependencies: fresh UUIDv7 ids, sorted, handed out in
// that order.
func newSubmitPlan(p *job.WorkflowParams, order []int) (*submitPlan, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("new workflow id: %w", err)
	}
	ids, err := sortedIDs(len(p.Tasks))
	if err != nil {
		return nil, err
	}
	plan := &submitPlan{id: id}
	idOf := make(map[string]uuid.UUID, len(p.Tasks))
	for n, i := range order {
		t := &p.Tasks[i]
		idOf[t.Ref] = ids[n]
		plan.tasks.addWithID(ids[n], &t.InsertParams, "")
		plan.refs = append(plan.refs, t.Ref)
		plan.runOns = append(plan.runOns, string(t.RunOn))
		plan.deps = append(plan.deps, int32(len(t.DependsOn)))
		plan.index = append(plan.index, i)
		for _, d := range t.DependsOn {
			plan.edgeJobs = append(plan.edgeJobs, ids[n])
			plan.edgeDeps = append(plan.edgeDeps, idOf[d])
		}
	}
	return plan, nil
}

// sortedIDs returns n fresh UUIDv7s in ascending order.
func sortedIDs(n int) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("new task id: %w", err)
		}
		ids[i] = id
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return ids, nil
}

// submit runs the rounds of WorkflowSubmit in r's transaction.
func (s *executor) submit(ctx context.Context, r *rounds, p *job.WorkflowParams, plan *submitPlan) (*store.WorkflowSubmitResult, error) {
	b := &plan.tasks
	var (
		wf    *job.Workflow
		tasks []*job.Job
	)
	err := r.round(ctx, p.IdempotencyKey == "", func(q *pgx.Batch) {
		q.Queue(workflowInsertSQL, s.now(), plan.id, p.Name, nullText(p.IdempotencyKey), nullText(p.IdempotencyFingerprint), len(p.Tasks))
		q.Queue(workflowTasksInsertSQL, s.now(), plan.id, b.ids, b.queues, b.kinds, b.args, b.priorities,
			b.runAts, b.maxAttempts, b.leaseTTLs, b.lockKeys, b.partitionKeys,
			b.requires, b.prefers, b.traceParents, b.timeouts, b.schedules, b.scheduledFors, b.callbackURLs,
			plan.refs, plan.runOns, plan.deps, plan.edgeJobs, plan.edgeDeps)
	}, func(br pgx.BatchResults) error {
		var err error
		if wf, err = scanWorkflow(br.QueryRow()); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("insert the workflow: %w", err)
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("insert its tasks: %w", err)
		}
		if tasks, err = scanJobs(rows); err != nil {
			return fmt.Errorf("insert its tasks: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if wf == nil {
		return s.submitTwin(ctx, r, p)
	}
	if !r.done {
		if err := r.round(ctx, true, func(*pgx.Batch) {}, func(pgx.BatchResults) error { return nil }); err != nil {
			return nil, err
		}
	}
	byID := make(map[uuid.UUID]*job.Job, len(tasks))
	for _, j := range tasks {
		byID[j.ID] = j
	}
	res := &store.WorkflowSubmitResult{Workflow: wf, Tasks: make([]*job.Job, len(p.Tasks)), Created: true}
	for n, i := range plan.index {
		if res.Tasks[i] = byID[b.ids[n]]; res.Tasks[i] == nil {
			return nil, fmt.Errorf("task %q was not inserted", plan.refs[n])
		}
	}
	return res, nil
}

// submitTwin finds, in the last round of r, the retained workflow whose
// idempotency key made p's insert skip its row, and its tasks:
// job.ErrIdempotencyMismatch when another request made it, errTwinGone
// when it is gone.
func (s *executor) submitTwin(ctx context.Context, r *rounds, p *job.WorkflowParams) (*store.WorkflowSubmitResult, error) {
	res := &store.WorkflowSubmitResult{}
	var fingerprint pgtype.Text
	err := r.round(ctx, true, func(q *pgx.Batch) {
		q.Queue(workflowLookupSQL, p.IdempotencyKey)
	}, func(br pgx.BatchResults) error {
		var err error
		res.Workflow, err = scanWorkflowAfter(br.QueryRow(), &fingerprint)
		return err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, errTwinGone
	case err != nil:
		return nil, fmt.Errorf("find the workflow of the idempotency key: %w", err)
	case fingerprint.Valid && fingerprint.String != p.IdempotencyFingerprint:
		return nil, job.ErrIdempotencyMismatch
	}
	rows, err := s.db.Query(ctx, workflowTasksSQL, pgUUID(res.Workflow.ID))
	if err != nil {
		return nil, fmt.Errorf("read the workflow's tasks: %w", err)
	}
	if res.Tasks, err = scanJobs(rows); err != nil {
		return nil, fmt.Errorf("read the workflow's tasks: %w", err)
	}
	return res, nil
}

// scanWorkflowAfter reads first, then a workflow, from row.
func scanWorkflowAfter(row pgx.Row, first any) (*job.Workflow, error) {
	return scanWorkflow(prefixedRow{row: row, first: first})
}

// prefixedRow scans one more column before the ones its scanner asks for.
type prefixedRow struct {
	row   pgx.Row
	first any
}

func (p prefixedRow) Scan(dest ...any) error { return p.row.Scan(append([]any{p.first}, dest...)...) }

// WorkflowGet returns a workflow with its tasks, edges, counts and
// journal, read on one snapshot. See store.WorkflowStore.
func (s *executor) WorkflowGet(ctx context.Context, id uuid.UUID) (*store.WorkflowDetail, error) {
	var d *store.WorkflowDetail
	err := s.readSnapshot(ctx, func(q querier) error {
		// Planned as pinnedRound plans: the tasks found by the workflow
		// index whatever the statistics say.
		if _, err := q.Exec(ctx, plannerOrderedSQL); err != nil {
			return err
		}
		if s.tx != nil {
			defer func() { _, _ = q.Exec(ctx, plannerResetSQL) }()
		}
		var journal []byte
		w, err := scanWorkflow(q.QueryRow(ctx, workflowGetSQL, pgUUID(id)), &journal)
		if err != nil {
			return notFound(err)
		}
		stored, err := job.ParseWorkflowJournal(journal)
		if err != nil {
			return err
		}
		d = &store.WorkflowDetail{Workflow: *w, Events: job.WorkflowJournal(w, stored)}
		rows, err := q.Query(ctx, workflowTasksSQL, pgUUID(id))
		if err != nil {
			return err
		}
		if d.Tasks, err = scanJobs(rows); err != nil {
			return err
		}
		d.Edges, err = readEdges(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, errorf("postgres: get workflow %s: %w", id, err)
	}
	d.Counts = store.CountTasks(d.Tasks)
	return d, nil
}

// readEdges reads the edges of workflow id (workflow_edges.sql).
func readEdges(ctx context.Context, q querier, id uuid.UUID) ([]store.Edge, error) {
	rows, err := q.Query(ctx, workflowEdgesSQL, pgUUID(id))
	if err != nil {
		return nil, err
	}
	var e store.Edge
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Edge, error) {
		err := row.Scan(uuidDest(&e.Task), uuidDest(&e.DependsOn))
		return e, err
	})
}

// WorkflowList returns a page of workflows, newest first, and the count
// of matches, in one round trip. See store.WorkflowStore.
func (s *executor) WorkflowList(ctx context.Context, params store.WorkflowListParams) (*store.WorkflowListResult, error) {
	if err := store.CheckWorkflowList(params); err != nil {
		return nil, err
	}
	var states []string
	for _, st := range params.States {
		states = append(states, string(st))
	}
	var after *[16]byte
	if params.After != nil {
		a := pgUUID(*params.After)
		after = &a
	}
	res := &store.WorkflowListResult{Total: -1, Workflows: []*job.Workflow{}}
	err := s.readSnapshot(ctx, func(q querier) error {
		if !params.NoTotal {
			if err := q.QueryRow(ctx, workflowCountSQL, nullText(params.Name), states).Scan(&res.Total); err != nil {
				return err
			}
		}
		if params.Limit == 0 {
			return nil
		}
		rows, err := q.Query(ctx, workflowListSQL, nullText(params.Name), states, after, params.Limit)
		if err != nil {
			return err
		}
		res.Workflows, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*job.Workflow, error) { return scanWorkflow(row) })
		return err
	})
	if err != nil {
		return nil, errorf("postgres: list workflows: %w", err)
	}
	return res, nil
}

// WorkflowCancel cancels the tasks of a workflow that are not final: one
// round locks them and the workflow, and, decided in Go
// (store.DecideCancel), one applies. See store.WorkflowStore.
//
// It locks every task not final in id order, then the workflow, while
// the end of a task locks that task first, then its dependents, its
// workflow and last its parent (store/children.go): no one order serves
// both, so the end of a child whose parent's id is lower than its own
// (a workflow task that spawned it) can deadlock with the cancel. The
// ends retry (finishGeneral); so does the cancel, in a transaction of
// its own (in the caller's, the deadlock aborted it: the error goes
// back), as JobCancel does.
func (s *executor) WorkflowCancel(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	for try := 0; ; try++ {
		w, err := s.workflowCancel(ctx, id)
		if err != nil && s.tx == nil && deadlock(err) && try < insertRounds {
			continue
		}
		if err != nil {
			return nil, errorf("postgres: cancel workflow %s: %w", id, err)
		}
		return w, nil
	}
}

// workflowCancel is one try of WorkflowCancel.
func (s *executor) workflowCancel(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	var w *job.Workflow
	err := s.transact(ctx, func(r *rounds) error {
		now := s.now()
		var (
			nodes []store.TaskNode
			wfs   []job.Workflow
			at    time.Time
		)
		err := r.pinnedRound(ctx, false, func(b *pgx.Batch) {
			b.Queue(workflowTasksLockActiveSQL, pgUUID(id))
			b.Queue(workflowLockSQL, [][16]byte{id}, now)
		}, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			if nodes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TaskNode, error) { return scanTaskNode(row, nil) }); err != nil {
				return err
			}
			wfs, at, err = collectWorkflows(br)
			return err
		})
		if err != nil {
			return err
		}
		if len(wfs) == 0 {
			return job.ErrNotFound
		}
		w = &wfs[0]
		if w.State.Final() {
			return fmt.Errorf("workflow is %s: %w", w.State, job.ErrWrongState)
		}
		tasks, ends, err := store.DecideCancel(nodes, at)
		if err != nil {
			return err
		}
		st := &step{tasks: tasks, at: at}
		if len(tasks) > 0 {
			events := map[uuid.UUID][]job.WorkflowEvent{id: {{Kind: job.WorkflowEventCancelRequested, At: at}}}
			st.workflows = store.DecideWorkflows(wfs, ends, events, at)
			w = changedWorkflow(w, st.workflows)
		}
		return s.applyStep(ctx, r, now, st)
	})
	return w, err
}

// WorkflowRetry retries the failed and canceled tasks of a workflow. See
// store.WorkflowStore and retryTasks.
func (s *executor) WorkflowRetry(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	var w *job.Workflow
	err := s.transact(ctx, func(r *rounds) error {
		now := s.now()
		st, err := s.retryTasks(ctx, r, now, id, nil, []job.WorkflowEvent{{Kind: job.WorkflowEventRetried}})
		if err != nil {
			return err
		}
		w = st.workflow
		return nil
	})
	if err != nil {
		return nil, errorf("postgres: retry workflow %s: %w", id, err)
	}
	return w, nil
}

// retryTasks retries tasks retry of workflow id (nil: every failed or
// canceled one, RetryPlan.RetryableTasks) in r's transaction, with
// events in its journal (their times set to the transaction's): one
// round reads the workflow's tasks and edges; one locks the tasks the
// retry may change, in id order, then the workflow, and reads the tasks
// again; decided in Go (store.DecideRetry), the last applies. It returns
// the applied step.
func (s *executor) retryTasks(ctx context.Context, r *rounds, now *time.Time, id uuid.UUID, retry []uuid.UUID, events []job.WorkflowEvent) (*step, error) {
	var plan store.RetryPlan
	err := r.pinnedRound(ctx, false, func(b *pgx.Batch) {
		b.Queue(workflowPlanSQL, pgUUID(id))
		b.Queue(workflowEdgesSQL, pgUUID(id))
	}, func(br pgx.BatchResults) error {
		var err error
		if plan.Tasks, err = collectNodes(br); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var e store.Edge
		plan.Edges, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Edge, error) {
			err := row.Scan(uuidDest(&e.Task), uuidDest(&e.DependsOn))
			return e, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the workflow: %w", err)
	}
	if retry == nil {
		if len(plan.Tasks) == 0 {
			return nil, job.ErrNotFound
		}
		if retry = plan.RetryableTasks(); len(retry) == 0 {
			return nil, fmt.Errorf("no task of the workflow is failed or canceled: %w", job.ErrWrongState)
		}
	}
	candidates := plan.Candidates(retry)
	ids := make([][16]byte, len(candidates))
	for i, c := range candidates {
		ids[i] = c
	}
	var (
		wfs []job.Workflow
		at  time.Time
	)
	err = r.pinnedRound(ctx, false, func(b *pgx.Batch) {
		b.Queue(tasksLockSQL, ids)
		b.Queue(workflowLockSQL, [][16]byte{id}, now)
		b.Queue(workflowPlanSQL, pgUUID(id))
	}, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("lock the tasks: %w", err)
		}
		var err error
		if wfs, at, err = collectWorkflows(br); err != nil {
			return fmt.Errorf("lock the workflow: %w", err)
		}
		plan.Tasks, err = collectNodes(br)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(wfs) == 0 {
		return nil, job.ErrNotFound
	}
	tasks, ends, err := store.DecideRetry(plan, retry, at)
	if err != nil {
		return nil, err
	}
	for i := range events {
		events[i].At = at
	}
	st := &step{tasks: tasks, at: at}
	st.workflows = store.DecideWorkflows(wfs, ends, map[uuid.UUID][]job.WorkflowEvent{id: events}, at)
	st.workflow = changedWorkflow(&wfs[0], st.workflows)
	return st, s.applyStep(ctx, r, now, st)
}

// collectNodes reads the next result of br as task facts.
func collectNodes(br pgx.BatchResults) ([]store.TaskNode, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.TaskNode, error) { return scanTaskNode(row, nil) })
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

// scanClaimed reads claimed jobs, whole, each followed by its inputs
// (claim.sql), until rows ends, and closes rows.
func scanClaimed(rows pgx.Rows) ([]*job.Job, error) {
	defer rows.Close()
	var jobs []*job.Job
	for rows.Next() {
		var (
			r              jobRow
			inputs, resume []byte
		)
		if err := rows.Scan(append(r.dest(), &inputs, &resume)...); err != nil {
			return nil, err
		}
		j, err := r.job()
		if err != nil {
			return nil, err
		}
		if j.Inputs, err = store.DecodeInputs(inputs); err != nil {
			return nil, errorf("postgres: job %s: %w", j.ID, err)
		}
		if j.Resume, err = store.DecodeResume(resume); err != nil {
			return nil, errorf("postgres: job %s: %w", j.ID, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// WorkflowDelete deletes a finished workflow with its tasks and edges,
// in one round trip: its tasks locked, then the workflow. See
// store.WorkflowStore.
func (s *executor) WorkflowDelete(ctx context.Context, id uuid.UUID) (int, error) {
	var (
		state string
		tasks int
	)
	err := s.transact(ctx, func(r *rounds) error {
		return r.pinnedRound(ctx, true, func(b *pgx.Batch) {
			b.Queue(workflowTasksLockAllSQL, pgUUID(id))
			b.Queue(workflowDeleteSQL, pgUUID(id))
		}, func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return err
			}
			return notFound(br.QueryRow().Scan(&state, &tasks))
		})
	})
	if err == nil && state == string(job.WorkflowRunning) {
		err = fmt.Errorf("workflow is running: %w", job.ErrWrongState)
	}
	if err != nil {
		return 0, errorf("postgres: delete workflow %s: %w", id, err)
	}
	return tasks, nil
}
