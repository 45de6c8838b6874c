package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// ProcessTaskSteps are the statements a driver runs, in the transaction
// it holds, for FinishProcessTask, which decides which run and in what
// order. Each is one statement of the driver's (or a composition of its
// own operations); none decides anything.
type ProcessTaskSteps interface {
	// FenceTask stores outcome as the task job's checkpoint, fenced by
	// its lease: job.ErrLeaseLost when the lease is not held. It locks
	// the task's job row, so nothing after it runs for a lost task.
	FenceTask(ctx context.Context, lease Lease, outcome json.RawMessage) error
	// CreateProcess makes process ns/id (running, no history);
	// job.ErrNotFound when it exists already.
	CreateProcess(ctx context.Context, ns, id string) (*Process, error)
	// LockProcess reads process ns/id for an update in this transaction;
	// job.ErrNotFound when there is none.
	LockProcess(ctx context.Context, ns, id string) (*Process, error)
	// CancelQueuedJob cancels job id if it is still queued (job.Cancel);
	// a job that runs or is gone is left as it is.
	CancelQueuedJob(ctx context.Context, id uuid.UUID) error
	// DeleteProcess deletes process ns/id and its history.
	DeleteProcess(ctx context.Context, ns, id string) error
	// InsertJob inserts one job in this transaction.
	InsertJob(ctx context.Context, p job.InsertParams) (*job.Job, error)
	// AppendProcessEvents appends events to the history of ns/id, their
	// event ids following after.
	AppendProcessEvents(ctx context.Context, ns, id string, after int64, events []json.RawMessage) error
	// UpdateProcess writes the process's new state and returns it.
	UpdateProcess(ctx context.Context, ns, id string, u ProcessUpdate) (*Process, error)
}

// ProcessUpdate is what a task's finish writes to its process's row.
type ProcessUpdate struct {
	Status   ProcessStatus
	Detail   string
	AuxState json.RawMessage // nil: unchanged
	Metadata json.RawMessage // nil: unchanged
	// Events is how many events were appended (the last event id grows
	// by it).
	Events int
	// TimerJob and TimerAt are the pending timer; uuid.Nil and nil for
	// none.
	TimerJob uuid.UUID
	TimerAt  *time.Time
}

// FinishProcessTask applies a task's result r through steps, in the one
// transaction the driver holds: the fence first (nothing happens for a
// task whose lease is gone), then the process's row (created or locked),
// its timer (the pending one canceled when the task removes or replaces
// it, or puts the process in error; a new one inserted), its history and
// its state. A removed process returns nil. The rules of processes'
// timers live here, once, for every driver.
func FinishProcessTask(ctx context.Context, steps ProcessTaskSteps, r ProcessTaskResult) (*Process, error) {
	if err := steps.FenceTask(ctx, r.Lease, r.Outcome); err != nil {
		return nil, err
	}
	p, err := openProcess(ctx, steps, r)
	if err != nil {
		return nil, err
	}
	cancelOld := r.Remove || r.UnsetTimer || r.SetTimer != nil || r.Status == ProcessError
	if cancelOld && p.TimerJob != uuid.Nil {
		if err := steps.CancelQueuedJob(ctx, p.TimerJob); err != nil {
			return nil, fmt.Errorf("cancel timer: %w", err)
		}
		p.TimerJob, p.TimerAt = uuid.Nil, nil
	}
	if r.Remove {
		if err := steps.DeleteProcess(ctx, r.Namespace, r.ID); err != nil {
			return nil, fmt.Errorf("remove: %w", err)
		}
		return nil, nil
	}
	if r.SetTimer != nil && r.Status != ProcessError {
		timer, err := steps.InsertJob(ctx, *r.SetTimer)
		if err != nil {
			return nil, fmt.Errorf("set timer: %w", err)
		}
		p.TimerJob, p.TimerAt = timer.ID, &timer.RunAt
	}
	if len(r.Events) > 0 {
		if err := steps.AppendProcessEvents(ctx, r.Namespace, r.ID, p.LastEventID, r.Events); err != nil {
			return nil, fmt.Errorf("append events: %w", err)
		}
	}
	p, err = steps.UpdateProcess(ctx, r.Namespace, r.ID, ProcessUpdate{
		Status: r.Status, Detail: r.Detail, AuxState: r.AuxState, Metadata: r.Metadata,
		Events: len(r.Events), TimerJob: p.TimerJob, TimerAt: p.TimerAt,
	})
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	return p, nil
}

// openProcess creates the task's process (an init task) or locks it.
func openProcess(ctx context.Context, steps ProcessTaskSteps, r ProcessTaskResult) (*Process, error) {
	if !r.Create {
		return steps.LockProcess(ctx, r.Namespace, r.ID)
	}
	p, err := steps.CreateProcess(ctx, r.Namespace, r.ID)
	if errors.Is(err, job.ErrNotFound) {
		return nil, fmt.Errorf("process exists: %w", job.ErrDuplicate)
	}
	return p, err
}
