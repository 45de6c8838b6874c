// Package storewatch lets tests wait for what a store holds (a job's
// state, a count) without polling it: Wrap returns a store.Store that
// fires a beacon after every call that may write, and Until checks the
// test's condition again after each. For tests only.
package storewatch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Store is a watched store.Store.
type Store struct {
	store.Store
	wrote testsignal.Beacon
	// onWrite, when set, also runs after each write (a helper process
	// passes its writes on to the test that watches it).
	onWrite func()
}

// Wrap watches s.
func Wrap(s store.Store) *Store {
	w := &Store{Store: s}
	w.wrote.Init()
	return w
}

// WrapNotify watches s and calls onWrite after each write too.
func WrapNotify(s store.Store, onWrite func()) *Store {
	w := Wrap(s)
	w.onWrite = onWrite
	return w
}

// Unwrap returns the watched store.
func (s *Store) Unwrap() store.Store { return s.Store }

// Wrote tells the waits that something wrote to the database: this store
// after a call, or a writer it cannot see (another process).
func (s *Store) Wrote() {
	s.wrote.Fire()
	if s.onWrite != nil {
		s.onWrite()
	}
}

// Until returns once cond holds, checking it now and after each write;
// it fails t when cond does not hold within testsignal.Timeout.
func (s *Store) Until(t testsignal.TB, what string, cond func() bool) {
	t.Helper()
	s.wrote.Until(t, what, cond)
}

// Of finds the watched store inside s, unwrapping the wrappers that have
// an Unwrap() store.Store method; nil when there is none.
func Of(s store.Store) *Store {
	for s != nil {
		if w, ok := s.(*Store); ok {
			return w
		}
		u, ok := s.(interface{ Unwrap() store.Store })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
	return nil
}

// Until waits, as (*Store).Until, on the watched store inside s; it fails
// t when s is not watched.
func Until(t testsignal.TB, s store.Store, what string, cond func() bool) {
	t.Helper()
	w := Of(s)
	if w == nil {
		t.Fatalf("storewatch: waiting for %s on a store that is not watched (storewatch.Wrap it)", what)
		return
	}
	w.Until(t, what, cond)
}

// The writes: each calls the store, then Wrote.

// JobInsertMany calls the store's, then Wrote.
func (s *Store) JobInsertMany(ctx context.Context, params []job.InsertParams) ([]store.InsertResult, error) {
	defer s.Wrote()
	return s.Store.JobInsertMany(ctx, params)
}

// JobClaim calls the store's, then Wrote.
func (s *Store) JobClaim(ctx context.Context, params store.ClaimParams) ([]*job.Job, error) {
	defer s.Wrote()
	return s.Store.JobClaim(ctx, params)
}

// JobHeartbeat calls the store's, then Wrote.
func (s *Store) JobHeartbeat(ctx context.Context, owner string, leases []store.Lease) ([]store.HeartbeatResult, error) {
	defer s.Wrote()
	return s.Store.JobHeartbeat(ctx, owner, leases)
}

// JobSetProgress calls the store's, then Wrote.
func (s *Store) JobSetProgress(ctx context.Context, lease store.Lease, progress job.Progress) (bool, error) {
	defer s.Wrote()
	return s.Store.JobSetProgress(ctx, lease, progress)
}

// JobSetCheckpoint calls the store's, then Wrote.
func (s *Store) JobSetCheckpoint(ctx context.Context, lease store.Lease, checkpoint json.RawMessage) (bool, error) {
	defer s.Wrote()
	return s.Store.JobSetCheckpoint(ctx, lease, checkpoint)
}

// JobFinish calls the store's, then Wrote.
func (s *Store) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	defer s.Wrote()
	return s.Store.JobFinish(ctx, outcomes)
}

// JobCancel calls the store's, then Wrote.
func (s *Store) JobCancel(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	defer s.Wrote()
	return s.Store.JobCancel(ctx, id)
}

// JobRetry calls the store's, then Wrote.
func (s *Store) JobRetry(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	defer s.Wrote()
	return s.Store.JobRetry(ctx, id)
}

// JobRescue calls the store's, then Wrote.
func (s *Store) JobRescue(ctx context.Context, limit int) (int, error) {
	defer s.Wrote()
	return s.Store.JobRescue(ctx, limit)
}

// JobPrune calls the store's, then Wrote.
func (s *Store) JobPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	defer s.Wrote()
	return s.Store.JobPrune(ctx, before, limit)
}

// JobPruneQueue calls the store's, then Wrote.
func (s *Store) JobPruneQueue(ctx context.Context, queue string, before time.Time, limit int) (int, error) {
	defer s.Wrote()
	return s.Store.JobPruneQueue(ctx, queue, before, limit)
}

// JobTake calls the store's, then Wrote.
func (s *Store) JobTake(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	defer s.Wrote()
	return s.Store.JobTake(ctx, id)
}

// QueueSetPaused calls the store's, then Wrote.
func (s *Store) QueueSetPaused(ctx context.Context, queue string, paused bool) error {
	defer s.Wrote()
	return s.Store.QueueSetPaused(ctx, queue, paused)
}

// QueueSetLimits calls the store's, then Wrote.
func (s *Store) QueueSetLimits(ctx context.Context, queue string, limits flow.Limits) error {
	defer s.Wrote()
	return s.Store.QueueSetLimits(ctx, queue, limits)
}

// QueueSetThrottleByIfUnset calls the store's, then Wrote.
func (s *Store) QueueSetThrottleByIfUnset(ctx context.Context, queue, by string) (bool, error) {
	defer s.Wrote()
	return s.Store.QueueSetThrottleByIfUnset(ctx, queue, by)
}

// QueuePurge calls the store's, then Wrote.
func (s *Store) QueuePurge(ctx context.Context, queue string) (int64, error) {
	defer s.Wrote()
	return s.Store.QueuePurge(ctx, queue)
}

// WorkerSeen calls the store's, then Wrote.
func (s *Store) WorkerSeen(ctx context.Context, id string, status store.WorkerStatus, done, failed int) error {
	defer s.Wrote()
	return s.Store.WorkerSeen(ctx, id, status, done, failed)
}

// WorkerMarkOffline calls the store's, then Wrote.
func (s *Store) WorkerMarkOffline(ctx context.Context, cutoff time.Time) (int, error) {
	defer s.Wrote()
	return s.Store.WorkerMarkOffline(ctx, cutoff)
}

// ProcessTaskFinish calls the store's, then Wrote.
func (s *Store) ProcessTaskFinish(ctx context.Context, r store.ProcessTaskResult) (*store.Process, error) {
	defer s.Wrote()
	return s.Store.ProcessTaskFinish(ctx, r)
}

// InTx calls the store's, then Wrote: what its function did through the
// Executor, which is not watched, has committed (or rolled back).
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, ex store.Executor) error) error {
	defer s.Wrote()
	return s.Store.InTx(ctx, fn)
}

// JobRerun calls the store's, then Wrote.
func (s *Store) JobRerun(ctx context.Context, id uuid.UUID, params store.RerunParams) (*job.Job, error) {
	defer s.Wrote()
	return s.Store.JobRerun(ctx, id, params)
}

// JobTimeOut calls the store's, then Wrote.
func (s *Store) JobTimeOut(ctx context.Context, params store.TimeOutParams) (int, error) {
	defer s.Wrote()
	return s.Store.JobTimeOut(ctx, params)
}

// SchedulePut calls the store's, then Wrote.
func (s *Store) SchedulePut(ctx context.Context, sc store.Schedule) (*store.Schedule, error) {
	defer s.Wrote()
	return s.Store.SchedulePut(ctx, sc)
}

// ScheduleDelete calls the store's, then Wrote.
func (s *Store) ScheduleDelete(ctx context.Context, name string) error {
	defer s.Wrote()
	return s.Store.ScheduleDelete(ctx, name)
}

// ScheduleSetPaused calls the store's, then Wrote.
func (s *Store) ScheduleSetPaused(ctx context.Context, name string, paused bool, next time.Time) (*store.Schedule, error) {
	defer s.Wrote()
	return s.Store.ScheduleSetPaused(ctx, name, paused, next)
}

// ScheduleAdvance calls the store's, then Wrote.
func (s *Store) ScheduleAdvance(ctx context.Context, a store.ScheduleAdvance) (bool, error) {
	defer s.Wrote()
	return s.Store.ScheduleAdvance(ctx, a)
}

// ProcessDelete calls the store's, then Wrote.
func (s *Store) ProcessDelete(ctx context.Context, namespace, id string) error {
	defer s.Wrote()
	return s.Store.ProcessDelete(ctx, namespace, id)
}

// WorkflowSubmit calls the store's, then Wrote.
func (s *Store) WorkflowSubmit(ctx context.Context, params store.WorkflowSubmitParams) (*store.WorkflowSubmitResult, error) {
	defer s.Wrote()
	return s.Store.WorkflowSubmit(ctx, params)
}

// WorkflowCancel calls the store's, then Wrote.
func (s *Store) WorkflowCancel(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	defer s.Wrote()
	return s.Store.WorkflowCancel(ctx, id)
}

// WorkflowRetry calls the store's, then Wrote.
func (s *Store) WorkflowRetry(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	defer s.Wrote()
	return s.Store.WorkflowRetry(ctx, id)
}

// WorkflowDelete calls the store's, then Wrote.
func (s *Store) WorkflowDelete(ctx context.Context, id uuid.UUID) (int, error) {
	defer s.Wrote()
	return s.Store.WorkflowDelete(ctx, id)
}

// JobStep calls the store's, then Wrote.
func (s *Store) JobStep(ctx context.Context, lease store.Lease, params store.StepParams) (*store.StepResult, error) {
	defer s.Wrote()
	return s.Store.JobStep(ctx, lease, params)
}

// JobWait calls the store's, then Wrote.
func (s *Store) JobWait(ctx context.Context, lease store.Lease, w job.WaitRequest) (*job.Job, error) {
	defer s.Wrote()
	return s.Store.JobWait(ctx, lease, w)
}

// JobSignal calls the store's, then Wrote.
func (s *Store) JobSignal(ctx context.Context, id uuid.UUID, name string, payload json.RawMessage) (*store.SignalResult, error) {
	defer s.Wrote()
	return s.Store.JobSignal(ctx, id, name, payload)
}

// JobSpawn calls the store's, then Wrote.
func (s *Store) JobSpawn(ctx context.Context, lease store.Lease, params store.SpawnParams) ([]store.InsertResult, error) {
	defer s.Wrote()
	return s.Store.JobSpawn(ctx, lease, params)
}
