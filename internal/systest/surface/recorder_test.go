package surface_test

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// recorder is the real store with every call noted against the request
// that made it: a request's context carries a *callLog (tagged by the
// node's handler), and each method appends its name to it before it runs.
// Calls made outside a request (the engine's, the gateway's sweeps) carry
// no log and are not noted. It proves that a refused request made no
// store call but its credential's lookup. It also tells the test every
// lease token a claim issues, which no answer but that claim's may show.
type recorder struct {
	st store.Store
	// claimed hears of every lease token a claim issues, the engine's
	// and the remote workers' alike.
	claimed func(tokens []uuid.UUID)
}

var _ store.Store = recorder{}

// callLog is the store calls of one request.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

type callLogKey struct{}

// withCallLog returns ctx carrying a new log, and the log.
func withCallLog(ctx context.Context) (context.Context, *callLog) {
	l := &callLog{}
	return context.WithValue(ctx, callLogKey{}, l), l
}

// list returns the calls so far.
func (l *callLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

func note(ctx context.Context, method string) {
	if l, ok := ctx.Value(callLogKey{}).(*callLog); ok {
		l.mu.Lock()
		l.calls = append(l.calls, method)
		l.mu.Unlock()
	}
}

func (r recorder) Migrate(ctx context.Context) error { note(ctx, "Migrate"); return r.st.Migrate(ctx) }
func (r recorder) Ping(ctx context.Context) error    { note(ctx, "Ping"); return r.st.Ping(ctx) }

func (r recorder) SchemaVersion(ctx context.Context) (store.SchemaVersion, error) {
	note(ctx, "SchemaVersion")
	return r.st.SchemaVersion(ctx)
}
func (r recorder) Close() error { return r.st.Close() }

func (r recorder) JobInsertMany(ctx context.Context, params []job.InsertParams) ([]store.InsertResult, error) {
	note(ctx, "JobInsertMany")
	return r.st.JobInsertMany(ctx, params)
}

func (r recorder) JobGet(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	note(ctx, "JobGet")
	return r.st.JobGet(ctx, id)
}

func (r recorder) JobList(ctx context.Context, params store.ListParams) (*store.ListResult, error) {
	note(ctx, "JobList")
	return r.st.JobList(ctx, params)
}

func (r recorder) JobEvents(ctx context.Context, id uuid.UUID) ([]job.Event, error) {
	note(ctx, "JobEvents")
	return r.st.JobEvents(ctx, id)
}

func (r recorder) JobClaim(ctx context.Context, params store.ClaimParams) ([]*job.Job, error) {
	note(ctx, "JobClaim")
	jobs, err := r.st.JobClaim(ctx, params)
	if r.claimed != nil && len(jobs) > 0 {
		tokens := make([]uuid.UUID, len(jobs))
		for i, j := range jobs {
			tokens[i] = j.LeaseToken
		}
		r.claimed(tokens)
	}
	return jobs, err
}

func (r recorder) JobHeartbeat(ctx context.Context, owner string, leases []store.Lease) ([]store.HeartbeatResult, error) {
	note(ctx, "JobHeartbeat")
	return r.st.JobHeartbeat(ctx, owner, leases)
}

func (r recorder) JobSetProgress(ctx context.Context, lease store.Lease, progress job.Progress) (bool, error) {
	note(ctx, "JobSetProgress")
	return r.st.JobSetProgress(ctx, lease, progress)
}

func (r recorder) JobSetCheckpoint(ctx context.Context, lease store.Lease, checkpoint json.RawMessage) (bool, error) {
	note(ctx, "JobSetCheckpoint")
	return r.st.JobSetCheckpoint(ctx, lease, checkpoint)
}

func (r recorder) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	note(ctx, "JobFinish")
	return r.st.JobFinish(ctx, outcomes)
}

func (r recorder) JobCancel(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	note(ctx, "JobCancel")
	return r.st.JobCancel(ctx, id)
}

func (r recorder) JobRetry(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	note(ctx, "JobRetry")
	return r.st.JobRetry(ctx, id)
}

func (r recorder) JobRerun(ctx context.Context, id uuid.UUID, params store.RerunParams) (*job.Job, error) {
	note(ctx, "JobRerun")
	return r.st.JobRerun(ctx, id, params)
}

func (r recorder) JobTimeOut(ctx context.Context, params store.TimeOutParams) (int, error) {
	note(ctx, "JobTimeOut")
	return r.st.JobTimeOut(ctx, params)
}

func (r recorder) ScheduleGet(ctx context.Context, name string) (*store.Schedule, error) {
	note(ctx, "ScheduleGet")
	return r.st.ScheduleGet(ctx, name)
}

func (r recorder) ScheduleLock(ctx context.Context, name string) (*store.Schedule, error) {
	note(ctx, "ScheduleLock")
	return r.st.ScheduleLock(ctx, name)
}

func (r recorder) ScheduleList(ctx context.Context) ([]store.Schedule, error) {
	note(ctx, "ScheduleList")
	return r.st.ScheduleList(ctx)
}

func (r recorder) ScheduleDue(ctx context.Context, now time.Time, limit int) ([]store.Schedule, error) {
	note(ctx, "ScheduleDue")
	return r.st.ScheduleDue(ctx, now, limit)
}

func (r recorder) SchedulePut(ctx context.Context, s store.Schedule) (*store.Schedule, error) {
	note(ctx, "SchedulePut")
	return r.st.SchedulePut(ctx, s)
}

func (r recorder) ScheduleDelete(ctx context.Context, name string) error {
	note(ctx, "ScheduleDelete")
	return r.st.ScheduleDelete(ctx, name)
}

func (r recorder) ScheduleSetPaused(ctx context.Context, name string, paused bool, next time.Time) (*store.Schedule, error) {
	note(ctx, "ScheduleSetPaused")
	return r.st.ScheduleSetPaused(ctx, name, paused, next)
}

func (r recorder) ScheduleAdvance(ctx context.Context, a store.ScheduleAdvance) (bool, error) {
	note(ctx, "ScheduleAdvance")
	return r.st.ScheduleAdvance(ctx, a)
}

func (r recorder) JobRescue(ctx context.Context, limit int) (int, error) {
	note(ctx, "JobRescue")
	return r.st.JobRescue(ctx, limit)
}

func (r recorder) JobPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	note(ctx, "JobPrune")
	return r.st.JobPrune(ctx, before, limit)
}

func (r recorder) JobPruneQueue(ctx context.Context, queue string, before time.Time, limit int) (int, error) {
	note(ctx, "JobPruneQueue")
	return r.st.JobPruneQueue(ctx, queue, before, limit)
}

func (r recorder) JobTake(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	note(ctx, "JobTake")
	return r.st.JobTake(ctx, id)
}

func (r recorder) WorkflowSubmit(ctx context.Context, params store.WorkflowSubmitParams) (*store.WorkflowSubmitResult, error) {
	note(ctx, "WorkflowSubmit")
	return r.st.WorkflowSubmit(ctx, params)
}

func (r recorder) WorkflowGet(ctx context.Context, id uuid.UUID) (*store.WorkflowDetail, error) {
	note(ctx, "WorkflowGet")
	return r.st.WorkflowGet(ctx, id)
}

func (r recorder) WorkflowList(ctx context.Context, params store.WorkflowListParams) (*store.WorkflowListResult, error) {
	note(ctx, "WorkflowList")
	return r.st.WorkflowList(ctx, params)
}

func (r recorder) WorkflowCancel(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	note(ctx, "WorkflowCancel")
	return r.st.WorkflowCancel(ctx, id)
}

func (r recorder) WorkflowRetry(ctx context.Context, id uuid.UUID) (*job.Workflow, error) {
	note(ctx, "WorkflowRetry")
	return r.st.WorkflowRetry(ctx, id)
}

func (r recorder) WorkflowDelete(ctx context.Context, id uuid.UUID) (int, error) {
	note(ctx, "WorkflowDelete")
	return r.st.WorkflowDelete(ctx, id)
}

func (r recorder) QueueDepth(ctx context.Context, queue string) (store.QueueDepth, error) {
	note(ctx, "QueueDepth")
	return r.st.QueueDepth(ctx, queue)
}

func (r recorder) QueueList(ctx context.Context) ([]store.QueueInfo, error) {
	note(ctx, "QueueList")
	return r.st.QueueList(ctx)
}

func (r recorder) QueueHealth(ctx context.Context, params store.HealthParams) (*store.Health, error) {
	note(ctx, "QueueHealth")
	return r.st.QueueHealth(ctx, params)
}

func (r recorder) QueueThroughput(ctx context.Context, since time.Time) ([]store.Throughput, error) {
	note(ctx, "QueueThroughput")
	return r.st.QueueThroughput(ctx, since)
}

func (r recorder) QueueSetPaused(ctx context.Context, queue string, paused bool) error {
	note(ctx, "QueueSetPaused")
	return r.st.QueueSetPaused(ctx, queue, paused)
}

func (r recorder) QueueSettings(ctx context.Context) ([]store.QueueSettings, error) {
	note(ctx, "QueueSettings")
	return r.st.QueueSettings(ctx)
}

func (r recorder) QueueSetLimits(ctx context.Context, queue string, limits flow.Limits) error {
	note(ctx, "QueueSetLimits")
	return r.st.QueueSetLimits(ctx, queue, limits)
}

func (r recorder) QueueSetThrottleByIfUnset(ctx context.Context, queue, by string) (bool, error) {
	note(ctx, "QueueSetThrottleByIfUnset")
	return r.st.QueueSetThrottleByIfUnset(ctx, queue, by)
}

func (r recorder) QueuePurge(ctx context.Context, queue string) (int64, error) {
	note(ctx, "QueuePurge")
	return r.st.QueuePurge(ctx, queue)
}

func (r recorder) LeaderAttempt(ctx context.Context, name, node string, ttl time.Duration) (bool, error) {
	note(ctx, "LeaderAttempt")
	return r.st.LeaderAttempt(ctx, name, node, ttl)
}

func (r recorder) LeaderResign(ctx context.Context, name, node string) error {
	note(ctx, "LeaderResign")
	return r.st.LeaderResign(ctx, name, node)
}

func (r recorder) KeyCreate(ctx context.Context, key store.APIKey) error {
	note(ctx, "KeyCreate")
	return r.st.KeyCreate(ctx, key)
}

func (r recorder) KeyList(ctx context.Context) ([]store.APIKey, error) {
	note(ctx, "KeyList")
	return r.st.KeyList(ctx)
}

func (r recorder) KeyByPrefix(ctx context.Context, prefix string) (*store.APIKey, error) {
	note(ctx, "KeyByPrefix")
	return r.st.KeyByPrefix(ctx, prefix)
}

func (r recorder) KeyRevoke(ctx context.Context, id string) error {
	note(ctx, "KeyRevoke")
	return r.st.KeyRevoke(ctx, id)
}

func (r recorder) WorkerCreate(ctx context.Context, w store.Worker, key store.APIKey) error {
	note(ctx, "WorkerCreate")
	return r.st.WorkerCreate(ctx, w, key)
}

func (r recorder) WorkerGet(ctx context.Context, id string) (*store.Worker, error) {
	note(ctx, "WorkerGet")
	return r.st.WorkerGet(ctx, id)
}

func (r recorder) WorkerList(ctx context.Context) ([]store.Worker, error) {
	note(ctx, "WorkerList")
	return r.st.WorkerList(ctx)
}

func (r recorder) WorkerSetDisabled(ctx context.Context, id string, disabled bool) (*store.Worker, error) {
	note(ctx, "WorkerSetDisabled")
	return r.st.WorkerSetDisabled(ctx, id, disabled)
}

func (r recorder) WorkerDelete(ctx context.Context, id string) error {
	note(ctx, "WorkerDelete")
	return r.st.WorkerDelete(ctx, id)
}

func (r recorder) WorkerSeen(ctx context.Context, id string, status store.WorkerStatus, done, failed int) error {
	note(ctx, "WorkerSeen")
	return r.st.WorkerSeen(ctx, id, status, done, failed)
}

func (r recorder) WorkerMarkOffline(ctx context.Context, cutoff time.Time) (int, error) {
	note(ctx, "WorkerMarkOffline")
	return r.st.WorkerMarkOffline(ctx, cutoff)
}

func (r recorder) ProcessGet(ctx context.Context, namespace, id string, page store.HistoryPage) (*store.Process, error) {
	note(ctx, "ProcessGet")
	return r.st.ProcessGet(ctx, namespace, id, page)
}

func (r recorder) ProcessList(ctx context.Context, params store.ProcessListParams) ([]store.Process, int64, error) {
	note(ctx, "ProcessList")
	return r.st.ProcessList(ctx, params)
}

func (r recorder) ProcessTaskFinish(ctx context.Context, res store.ProcessTaskResult) (*store.Process, error) {
	note(ctx, "ProcessTaskFinish")
	return r.st.ProcessTaskFinish(ctx, res)
}

func (r recorder) ProcessDelete(ctx context.Context, namespace, id string) error {
	note(ctx, "ProcessDelete")
	return r.st.ProcessDelete(ctx, namespace, id)
}

func (r recorder) Wake(ctx context.Context, queues ...string) error {
	note(ctx, "Wake")
	return r.st.Wake(ctx, queues...)
}

func (r recorder) Listen(ctx context.Context, notify func(store.Notification)) error {
	note(ctx, "Listen")
	return r.st.Listen(ctx, notify)
}

// InTx notes the transaction as one call; the operations inside it run
// on the real store's executor, unrecorded.
func (r recorder) InTx(ctx context.Context, fn func(ctx context.Context, ex store.Executor) error) error {
	note(ctx, "InTx")
	return r.st.InTx(ctx, fn)
}

func (r recorder) WebhookCreate(ctx context.Context, w store.Webhook) error {
	note(ctx, "WebhookCreate")
	return r.st.WebhookCreate(ctx, w)
}

func (r recorder) WebhookGet(ctx context.Context, id string) (*store.Webhook, error) {
	note(ctx, "WebhookGet")
	return r.st.WebhookGet(ctx, id)
}

func (r recorder) WebhookList(ctx context.Context) ([]store.Webhook, error) {
	note(ctx, "WebhookList")
	return r.st.WebhookList(ctx)
}

func (r recorder) WebhookUpdate(ctx context.Context, w store.Webhook) (*store.Webhook, error) {
	note(ctx, "WebhookUpdate")
	return r.st.WebhookUpdate(ctx, w)
}

func (r recorder) WebhookDelete(ctx context.Context, id string) error {
	note(ctx, "WebhookDelete")
	return r.st.WebhookDelete(ctx, id)
}

func (r recorder) WebhookEventsTake(ctx context.Context, limit int) ([]store.WebhookEvent, error) {
	note(ctx, "WebhookEventsTake")
	return r.st.WebhookEventsTake(ctx, limit)
}

func (r recorder) WebhookLimitsLock(ctx context.Context, keys []store.WebhookLimitKey) ([]store.WebhookLimit, error) {
	note(ctx, "WebhookLimitsLock")
	return r.st.WebhookLimitsLock(ctx, keys)
}

func (r recorder) WebhookLimitsSave(ctx context.Context, limits []store.WebhookLimit) error {
	note(ctx, "WebhookLimitsSave")
	return r.st.WebhookLimitsSave(ctx, limits)
}

func (r recorder) WebhookLimitsDue(ctx context.Context, sentBefore time.Time, limit int) ([]store.WebhookLimit, error) {
	note(ctx, "WebhookLimitsDue")
	return r.st.WebhookLimitsDue(ctx, sentBefore, limit)
}

func (r recorder) SettingInit(ctx context.Context, name, value string) (string, error) {
	note(ctx, "SettingInit")
	return r.st.SettingInit(ctx, name, value)
}

func (r recorder) SettingGet(ctx context.Context, name string) (string, error) {
	note(ctx, "SettingGet")
	return r.st.SettingGet(ctx, name)
}

func (r recorder) JobStep(ctx context.Context, lease store.Lease, params store.StepParams) (*store.StepResult, error) {
	note(ctx, "JobStep")
	return r.st.JobStep(ctx, lease, params)
}

func (r recorder) JobSteps(ctx context.Context, id uuid.UUID) ([]job.Step, error) {
	note(ctx, "JobSteps")
	return r.st.JobSteps(ctx, id)
}

func (r recorder) JobWait(ctx context.Context, lease store.Lease, w job.WaitRequest) (*job.Job, error) {
	note(ctx, "JobWait")
	return r.st.JobWait(ctx, lease, w)
}

func (r recorder) JobSignal(ctx context.Context, id uuid.UUID, name string, payload json.RawMessage) (*store.SignalResult, error) {
	note(ctx, "JobSignal")
	return r.st.JobSignal(ctx, id, name, payload)
}

func (r recorder) JobSpawn(ctx context.Context, lease store.Lease, params store.SpawnParams) ([]store.InsertResult, error) {
	note(ctx, "JobSpawn")
	return r.st.JobSpawn(ctx, lease, params)
}
