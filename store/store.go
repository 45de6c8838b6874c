// Package store defines the Store interface every database driver
// implements, in jobd's own types. The job state machine of
// docs/design.md is decided in Go, once (job.Finish, job.Rescue, job.Cancel,
// job.Retry; DecideFinish and DecideRescue here for batches), and the
// drivers only fence and apply it: each transition is one transaction that
// reads the row's facts with the row locked, decides, and writes the
// decision with a WHERE clause that checks the state (and, for a lease
// holder, the lease token) it read, appending to the events journal in
// the same transaction. Checks of input that do not depend on the dialect
// live here too (check.go). The conformance suite in store/storetest holds
// every driver to the same rules.
//
// Time. Every rule below that compares with "now" reads the store's clock
// (the database's own now() when the clock is the real one). An instant
// that is due is reached: a job is available once run_at <= now, a lease
// is expired once lease_expires_at <= now, a leader term has ended once
// its expiry <= now.
//
// updated_at. Every change of a job sets its updated_at to the time of
// the transaction that makes it: an insert, a claim, progress, a
// checkpoint, a cancel request and every state change. (SQLite may stamp
// it a few microseconds after the clock's time, to keep it strictly
// increasing.) A heartbeat does not: it moves only heartbeat_at and the
// lease expiry, so that the "updated since" feed (ListParams.UpdatedSince)
// is not flooded with every running job every few seconds.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
)

// Store is a jobd database: every operation, each in a transaction of its
// own, and InTx to run several in one. All methods are safe for concurrent
// use, and every error they return wraps one of job's sentinels where one
// applies.
type Store interface {
	Executor
	LeaderStore
	Notifier

	// Migrate brings the schema up to date. It is idempotent and safe to
	// run from several nodes at once.
	Migrate(ctx context.Context) error
	// SchemaVersion reads how far the database's schema is migrated
	// (Current) and the schema this build migrates to (Latest).
	SchemaVersion(ctx context.Context) (SchemaVersion, error)
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the store's connections.
	Close() error

	// InTx runs fn in one transaction and commits it when fn returns nil;
	// it rolls it back when fn returns an error (which InTx returns) or
	// panics (InTx panics again once it has rolled back). fn gets an
	// Executor whose operations run in that transaction: they see each
	// other's writes, and they all commit or none does. Their
	// notifications (wake-ups of queues, cancel requests, the wake-up of a
	// delayed job when it falls due) are sent only once the transaction
	// has committed, and never when it rolls back.
	//
	// Inside fn, use ex and fn's ctx, never the Store: the transaction
	// holds what a Store call may wait for (SQLite's one writer, the rows
	// PostgreSQL locked), so a Store call could wait for fn forever. A
	// Store method called with fn's ctx, or a context derived from it,
	// fails at once with ErrCalledInTx instead. An error from ex may leave
	// the transaction unusable (PostgreSQL aborts a transaction at its
	// first failed statement): return it from fn. fn must not use ex from
	// several goroutines at once, nor keep it after it returns.
	InTx(ctx context.Context, fn func(ctx context.Context, ex Executor) error) error
}

// ErrCalledInTx is the error of a Store method called, with its context,
// inside the Store's own transaction (InTx), where it could wait for that
// transaction forever: fn must use the Executor it was given.
var ErrCalledInTx = errors.New("store: the Store was called inside its own transaction; use the Executor InTx gave")

// Executor holds the operations that can run inside one transaction: on
// a Store, each runs in a transaction of its own; on the Executor that
// InTx gives (or a driver makes of a transaction its caller holds), all
// run in that transaction. What they notify is sent once it commits.
type Executor interface {
	JobStore
	WorkflowStore
	DurableStore
	QueueStore
	KeyStore
	WorkerStore
	ProcessStore
	ScheduleStore
	WebhookStore
	SessionStore
	// Wake tells the workers of queues, on every node sharing the
	// database, that jobs may be available: at once, or, inside a
	// transaction, once it commits.
	Wake(ctx context.Context, queues ...string) error
}

// JobStore holds the jobs, their state machine (package job decides
// it) and their journal.
type JobStore interface {
	// JobInsertMany creates jobs, in one transaction. Each params is
	// normalised and validated first (job.InsertParams.Normalize); one bad
	// params fails the whole call and writes nothing. A params whose
	// IdempotencyKey matches a retained job, or (Unique == "active") whose
	// args hash matches a queued or running job, yields that job with
	// Created false instead of a new one. Jobs available now wake the
	// workers of their queue (see Listen).
	JobInsertMany(ctx context.Context, params []job.InsertParams) ([]InsertResult, error)
	// JobGet returns one job, or job.ErrNotFound.
	JobGet(ctx context.Context, id uuid.UUID) (*job.Job, error)
	// JobList returns jobs matching the filter and the total count of
	// matches (ignoring Limit and the cursor), unless NoTotal.
	JobList(ctx context.Context, params ListParams) (*ListResult, error)
	// JobEvents returns a job's journal, oldest first, each entry's ID its
	// position (1, 2, 3… per job); an unknown job has none (and no error).
	// The journal lives in the job's row, its common entries implied by
	// the row's columns (job.Journal), and goes with the row.
	JobEvents(ctx context.Context, id uuid.UUID) ([]job.Event, error)

	// JobClaim moves up to Max available jobs of Queue from queued to
	// running, best first (priority ascending, then run_at, then id), with
	// attempt+1, a fresh lease token each, the lease owner and an expiry of
	// now + the job's lease TTL. A job with a timeout (its own, else
	// DefaultTimeout) gets the deadline now + that timeout, which its
	// lease never outlives, here nor at any renewal. The claim clears the
	// job's result (a re-run's, kept readable until now; the claimed job
	// carries it as PreviousResult). A job is available when queued, its run_at
	// has passed, its queue is not paused, and no running job holds its
	// lock_key; of several available jobs sharing a lock_key at most one is
	// claimed. Concurrent claimers, on any node, never receive the same job
	// and never run two jobs of one lock_key at once.
	//
	// Flow control (QueueSetLimits): nothing is claimed from a queue whose
	// throttle has not passed (QueueSettings.ThrottledUntil), nor from a
	// partition whose own has not (with a ThrottleBy of partition_key). A
	// limited queue's claim hands out at most its GlobalLimit less its
	// running jobs (on every node and remote worker), at most each
	// partition's PartitionLimit less the partition's running jobs (the
	// jobs without a partition_key are the partition ""), and no more than
	// its Rate allows (flow.Allowance, the theoretical arrival time kept
	// to the microsecond, rounded up), the rate's state advancing by what
	// it claims. Concurrent claims of a queue, on any node, never hand out
	// more than that between them; a partition that can start nothing does
	// not hide the others' jobs behind its own. A claim may still come
	// back short of what the limits allow.
	JobClaim(ctx context.Context, params ClaimParams) ([]*job.Job, error)
	// JobHeartbeat extends the leases still held (state running, token
	// current, and owned by the lease's Owner, or by owner for a lease
	// that names none, unless that is empty too, and the attempt's
	// deadline, if any, not passed) to now + each job's lease TTL, or its
	// deadline when that comes first, and sets heartbeat_at; it does not change updated_at nor
	// the lease owner. It reports, for each lease in order,
	// whether it is still held and whether cancel was requested.
	JobHeartbeat(ctx context.Context, owner string, leases []Lease) ([]HeartbeatResult, error)
	// JobSetProgress stores progress and extends the lease, fenced by the
	// lease (see Lease); job.ErrLeaseLost when the lease is not held. It
	// reports whether cancel was requested.
	JobSetProgress(ctx context.Context, lease Lease, progress job.Progress) (cancelRequested bool, err error)
	// JobSetCheckpoint stores the checkpoint (kept across retries) and
	// extends the lease, fenced like JobSetProgress. It reports whether
	// cancel was requested.
	JobSetCheckpoint(ctx context.Context, lease Lease, checkpoint json.RawMessage) (cancelRequested bool, err error)
	// JobFinish applies the lease holders' outcomes (job.Finish), each
	// fenced by its lease (see Lease), in one transaction. Results are in the order of
	// outcomes; an outcome whose lease is not held, or whose lease an
	// earlier outcome of the batch used, changes nothing and reports Lost,
	// unless it repeats the outcome the job's row remembers (Repeat): each
	// job remembers the lease token of the last attempt whose outcome a
	// call applied, that outcome's status and the lease owner that held
	// it, so that an outcome sent again (its holder never got the answer)
	// of the same status, with that token (and that owner when it names
	// one), reports Repeat with the job's current state and changes
	// nothing, even after the job was claimed again; of another status,
	// or of an earlier attempt, Lost.
	// A cancel request wins: a job whose cancel was requested and whose
	// holder reports a failure (retryable or not) or a release ends
	// canceled (journal "canceled"), never queued again; a success still
	// succeeds. A throttled failure (Outcome.Throttle) requeues its job
	// as job.Finish decides and, in the same transaction, throttles the
	// job's queue, or its partition when the queue's ThrottleBy is
	// partition_key, until the job's new run_at (a throttle already set
	// that ends later stays). A job it makes final that has a callback
	// URL records a WebhookCallback event in the outbox, and one it fails
	// for good a WebhookJobFailed event (see WebhookStore), in the same
	// transaction. Each queue with a GlobalLimit or a PartitionLimit
	// whose jobs the call takes out of running is woken once, on every
	// node, after the commit (see Listen): that made room its claimers
	// may wait for. The driver may know those queues from a view of its
	// own (the queues its claims met): a wake-up it misses leaves the
	// claimers to their pacing. A queue without either sends nothing.
	JobFinish(ctx context.Context, outcomes []Outcome) ([]FinishResult, error)

	// JobCancel cancels a queued job at once (state canceled, journal
	// "canceled") or asks a running one to stop (cancel_requested, journal
	// "cancel-requested"), and returns the job (job.Cancel). It is
	// idempotent: for a running job whose cancel was already requested it
	// returns the job and writes nothing. job.ErrWrongState when the job
	// is already final. Canceling a queued job that has a callback URL
	// records its WebhookCallback event (see WebhookStore) in the same
	// transaction. Asking a running job to stop notifies its holder
	// at once, whatever its node (see Listen), once the request has
	// committed.
	JobCancel(ctx context.Context, id uuid.UUID) (*job.Job, error)
	// JobRetry puts a failed or canceled job back to queued with its
	// attempts reset and run_at now (job.Retry); job.ErrWrongState
	// otherwise, job.ErrDuplicate when an active twin (same args hash)
	// exists.
	JobRetry(ctx context.Context, id uuid.UUID) (*job.Job, error)
	// JobRerun puts a finished job (succeeded, failed or canceled) back
	// to queued (job.Rerun): due now, attempts and cancel request reset,
	// its rerun counter incremented, its state and result kept as
	// previous_state and previous_result, and its result kept as the
	// result, readable, until the claim of the new attempt clears it
	// (JobClaim). params.Args, when set, replace the args (checked as a
	// submission's; the args hash follows for a job with active-duplicate
	// dedupe). job.ErrDuplicate when an active twin (same args hash)
	// exists. A rerun of a job queued or running because of an earlier
	// rerun, without different args, returns it and writes nothing (so
	// that two concurrent reruns make one); of any other queued or
	// running job, job.ErrWrongState.
	JobRerun(ctx context.Context, id uuid.UUID, params RerunParams) (*job.Job, error)

	// JobRescue takes running jobs whose lease expired (lease_expires_at <=
	// now) back (job.Rescue): to queued (run_at now, journal "rescued"), or
	// to failed when they used all their attempts (journal "failed"), or to
	// canceled when their cancel was requested (journal "canceled"). At
	// most limit jobs per call. Each records its outbox events as JobFinish
	// does, and WebhookJobRescued for a job put back in its queue, and
	// wakes the queues whose room it freed as JobFinish does.
	JobRescue(ctx context.Context, limit int) (int, error)
	// JobTimeOut ends the attempts of running jobs whose deadline passed
	// (deadline <= now; see JobClaim) (job.TimeOut): back to queued at
	// now + params.RetryDelay while attempts are left, else failed; last
	// error "timed out after …", journal "timed-out"; canceled when their
	// cancel was requested. A running job whose deadline passed holds no
	// lease any more (JobHeartbeat, JobSetProgress, JobSetCheckpoint and
	// JobFinish refuse it), and JobRescue leaves it to JobTimeOut. At most
	// params.Limit jobs per call. It wakes the queues whose room it freed
	// as JobFinish does.
	JobTimeOut(ctx context.Context, params TimeOutParams) (int, error)
	// JobPrune deletes finished jobs (succeeded, failed, canceled) whose
	// finished_at is before before, and their events. At most limit jobs
	// per call; and up to limit outbox events older than before (see
	// WebhookStore), which nobody dispatched; and up to limit of the
	// partitions' flow state whose rate state and throttle have passed.
	JobPrune(ctx context.Context, before time.Time, limit int) (int, error)
	// JobPruneQueue is JobPrune for the jobs of one queue: it deletes
	// finished jobs of queue whose finished_at is before before, and their
	// events, at most limit per call. Active jobs are never touched.
	JobPruneQueue(ctx context.Context, queue string, before time.Time, limit int) (int, error)
	// JobTake deletes a finished job (succeeded, failed or canceled) with
	// its journal, in one transaction, and returns it as it was: a result
	// that can be fetched once. job.ErrNotFound when there is no such job
	// (or a concurrent take got it first), job.ErrWrongState when it is
	// queued or running, and then nothing is deleted.
	JobTake(ctx context.Context, id uuid.UUID) (*job.Job, error)
}

// QueueStore holds the queues' settings and counts.
type QueueStore interface {
	// QueueList returns every queue that has jobs or a setting, with job
	// counts by state.
	QueueList(ctx context.Context) ([]QueueInfo, error)
	// QueueDepth counts the queued jobs of one queue: those due now and
	// those scheduled later. It reads the claim index alone, so its cost
	// grows with that queue's queued jobs, never with the table (finished
	// jobs) nor the other queues; it takes no lock. An unknown queue has
	// depth zero.
	QueueDepth(ctx context.Context, queue string) (QueueDepth, error)
	// QueueSetPaused pauses or resumes a queue; a paused queue is not
	// claimed from on any node. An unknown queue is created. Resuming
	// wakes the queue's workers on every node (inside a transaction,
	// once it commits), so that they claim at once rather than at their
	// next poll.
	QueueSetPaused(ctx context.Context, queue string, paused bool) error
	// QueueSettings returns the stored settings of every queue that has
	// any (paused, limits, a throttle), by name, without counting jobs:
	// cheap enough for every node to read each second.
	QueueSettings(ctx context.Context) ([]QueueSettings, error)
	// QueueSetLimits replaces a queue's flow control (creating its
	// settings) and wakes its workers. Every claim after the commit, on
	// every node, applies the new limits: a claim that still takes the
	// unlimited path for a queue that has become limited claims nothing
	// from it. limits must pass Check (a *job.ValidationError otherwise,
	// and nothing changes). The state the new limits give no meaning to
	// goes: the rate state of a rate that is no longer of the whole queue,
	// or by partition_key; the partitions' throttles without a ThrottleBy
	// of partition_key. The whole queue's throttle stays until it passes.
	QueueSetLimits(ctx context.Context, queue string, limits flow.Limits) error
	// QueueSetThrottleByIfUnset sets a queue's ThrottleBy to by (creating
	// its settings) when it has none, and keeps every other setting, in
	// one conditional write: limits that another writer (QueueSetLimits,
	// on any node) commits meanwhile are kept, never overwritten, and
	// a ThrottleBy already set stays. It reports whether it set by. by
	// must pass flow.Limits.Check as a ThrottleBy and not be empty (a
	// *job.ValidationError otherwise, and nothing changes). It wakes no
	// worker: a ThrottleBy allows nothing more.
	QueueSetThrottleByIfUnset(ctx context.Context, queue, by string) (bool, error)
	// QueuePurge deletes every job of queue that is not running (queued
	// and finished ones) with its journal, and returns how many jobs it
	// deleted. Running jobs are left alone: their holders still hold
	// leases; so are workflows' tasks (their workflow is pruned whole)
	// and the children of a parent that is not final (queued, running or
	// waiting), which would otherwise wait for ever for a child gone:
	// cancel the parent, which cancels its children, or purge once it is
	// final. It deletes in batches, each its own transaction, so that no
	// transaction grows with the queue (inside a transaction, the
	// batches are all that transaction's); a job that changes state while
	// the purge runs may be left. The queue's settings (paused) are kept.
	QueuePurge(ctx context.Context, queue string) (int64, error)
	// QueueHealth reports, in one statement, each queue's queued,
	// scheduled and running jobs, the run_at of its oldest due job and
	// its due jobs waiting on a busy lock_key, and the remote workers by
	// status, as of the store's now (see Health). It reads the partial
	// indexes of the active jobs, never the finished ones: its cost grows
	// with the active jobs, not with the table.
	QueueHealth(ctx context.Context, params HealthParams) (*Health, error)
	// QueueThroughput counts the jobs that finished (succeeded, failed or
	// canceled) at or after since, by queue, minute of finished_at (UTC,
	// the minute's start) and state, ordered by queue, minute and state.
	// It reads only the jobs finished since (an index range): its cost
	// grows with the window's jobs, not with the table.
	QueueThroughput(ctx context.Context, since time.Time) ([]Throughput, error)
}

// LeaderStore elects, per duty, the node that runs it.
type LeaderStore interface {
	// LeaderAttempt makes node the leader of name for ttl (until now +
	// ttl) when nobody else holds an unexpired term, or extends node's own
	// term. A term has expired once its expiry <= now. It reports whether
	// node leads.
	LeaderAttempt(ctx context.Context, name, node string, ttl time.Duration) (bool, error)
	// LeaderResign ends node's term of name, if it holds it.
	LeaderResign(ctx context.Context, name, node string) error
}

// KeyStore holds the API key records.
type KeyStore interface {
	// KeyCreate stores an API key record (its secret only as a hash);
	// job.ErrDuplicate when its id or prefix is taken.
	KeyCreate(ctx context.Context, key APIKey) error
	// KeyList returns every API key record, oldest first.
	KeyList(ctx context.Context) ([]APIKey, error)
	// KeyByPrefix returns the key whose public prefix is prefix, or
	// job.ErrNotFound. Revoked keys are not found. A worker's key comes
	// with its worker (APIKey.Worker, without RunningJobs), read in the
	// same statement, so that a request authenticated by it costs one
	// read.
	KeyByPrefix(ctx context.Context, prefix string) (*APIKey, error)
	// KeyRevoke deletes a key; job.ErrNotFound when there is none.
	KeyRevoke(ctx context.Context, id string) error
}

// WorkerStore holds the registry of remote workers.
type WorkerStore interface {
	// WorkerCreate stores a remote worker (status idle, never heard from)
	// and its API key, whose WorkerID must be the worker's id, in one
	// transaction. job.ErrDuplicate when the id or the key's prefix is taken.
	WorkerCreate(ctx context.Context, w Worker, key APIKey) error
	// WorkerGet returns one worker, or job.ErrNotFound.
	WorkerGet(ctx context.Context, id string) (*Worker, error)
	// WorkerList returns every worker, oldest first, with RunningJobs.
	WorkerList(ctx context.Context) ([]Worker, error)
	// WorkerSetDisabled disables or enables a worker and returns it;
	// job.ErrNotFound when there is none.
	WorkerSetDisabled(ctx context.Context, id string, disabled bool) (*Worker, error)
	// WorkerDelete deletes a worker and revokes its API keys, in one
	// transaction; job.ErrNotFound when there is none. Jobs it holds keep
	// their leases until those expire.
	WorkerDelete(ctx context.Context, id string) error
	// WorkerSeen records a sign of life of a worker (a heartbeat or a
	// claim): last_heartbeat_at becomes now and status becomes status, or,
	// when status is "", stays as it is unless it was offline (then it
	// becomes active). jobs_done and jobs_failed grow by done and failed.
	// job.ErrNotFound when there is no such worker.
	WorkerSeen(ctx context.Context, id string, status WorkerStatus, done, failed int) error
	// WorkerMarkOffline marks offline every worker not offline yet whose
	// last heartbeat (or creation, if it never beat) is at or before
	// cutoff, each by an update conditional on that, so that a heartbeat
	// committed first wins and one committed after brings the worker back.
	// It returns how many it marked. Each worker it marks records a
	// WebhookWorkerOffline event in the outbox, in the same transaction.
	WorkerMarkOffline(ctx context.Context, cutoff time.Time) (int, error)
}

// ProcessStore holds the durable processes.
type ProcessStore interface {
	// ProcessGet returns a process with the page of its history that page
	// selects, or job.ErrNotFound.
	ProcessGet(ctx context.Context, namespace, id string, page HistoryPage) (*Process, error)
	// ProcessList returns the processes of a namespace (without history),
	// by id ascending, and the total count of matches.
	ProcessList(ctx context.Context, params ProcessListParams) ([]Process, int64, error)
	// ProcessTaskFinish applies a process task's result in one
	// transaction, fenced by the task's lease (token and owner, see Lease;
	// job.ErrLeaseLost when it is not held; then nothing changes): it stores r.Outcome as the
	// task job's checkpoint and creates, changes or removes the process,
	// appends its events, and sets or cancels its timer (a replaced timer
	// job that is still queued is canceled, journal "canceled"). The task
	// job itself stays running: its holder finishes it with JobFinish.
	ProcessTaskFinish(ctx context.Context, r ProcessTaskResult) (*Process, error)
	// ProcessDelete deletes a process and its history, and cancels its
	// queued timer job, in one transaction; job.ErrNotFound when there is
	// none.
	ProcessDelete(ctx context.Context, namespace, id string) error
}

// Notifier carries the signals between nodes: jobs may be available in a
// queue, a running job's cancel was requested.
type Notifier interface {
	// Wake tells the workers of queues, on every node sharing the database,
	// that jobs may be available.
	Wake(ctx context.Context, queues ...string) error
	// Listen calls notify, until ctx ends, with a Notification each time
	// jobs may have become available in a queue (an insert, a retry, a
	// rescue, a release, a Wake, room made in a limited queue by a job's
	// end: see JobFinish) and each time the cancel of a running job
	// is requested (JobCancel; a repeated cancel, which writes nothing,
	// need not notify again), on any node. Notification{} (Queue "") means
	// "any queue" and is sent after a reconnection, when notifications may
	// have been missed: a missed cancel is then seen at the holder's next
	// heartbeat. Listen survives database restarts, reconnecting with
	// backoff. notify must not block.
	Listen(ctx context.Context, notify func(Notification)) error
}

// Notification is one thing Listen reports.
type Notification struct {
	// Queue names a queue where jobs may have become available; "" after a
	// reconnection means any queue (notifications may have been missed).
	Queue string
	// CancelJob, when not zero, is a running job whose cancel was just
	// requested; Queue is then empty.
	CancelJob uuid.UUID
	// Earliest, when set, is a lower bound of the claim order of the jobs
	// the wake-up is about: none of them sorts before it. A claimer whose
	// cursor (ClaimParams.After) sorts before Earliest may keep it. Nil
	// when they may sort anywhere, which is always allowed.
	Earliest *ClaimBound
}

// ClaimBound is a position in claim order by priority and run_at only: it
// stands for every job at or after it, whatever its id.
type ClaimBound struct {
	Priority int
	RunAt    time.Time
}

// Least returns the bound of every job at or after b or o: the least of
// each of their parts.
func (b ClaimBound) Least(o ClaimBound) ClaimBound {
	if o.RunAt.Before(b.RunAt) {
		b.RunAt = o.RunAt
	}
	b.Priority = min(b.Priority, o.Priority)
	return b
}

// After reports whether every job at or after b sorts after c, so that a
// claim that starts after c still reaches them.
func (b ClaimBound) After(c ClaimCursor) bool {
	return b.Priority > c.Priority || b.Priority == c.Priority && b.RunAt.After(c.RunAt)
}

// InsertResult is the outcome of one insert.
type InsertResult struct {
	Job *job.Job
	// Created is false when an idempotency key or an active duplicate
	// matched an existing job, which Job then is.
	Created bool
}

// ClaimParams says what JobClaim takes.
type ClaimParams struct {
	Queue string
	Max   int
	// Owner names the claimer (a node, or a remote worker) in lease_owner.
	Owner string
	// Capabilities are the claimer's (normalised: see
	// job.NormalizeCapabilities). A job is taken only when its requires
	// are all among them; a job whose prefers are not all among them only
	// when its prefer window has passed (now >= run_at + PreferWindow) or
	// no worker other than WorkerID that is online (not offline), enabled,
	// not busy (status idle or active) and has all its prefers exists.
	// Jobs without requires and prefers cost the claim nothing more.
	Capabilities []string
	// WorkerID is the remote worker that claims, if one does.
	WorkerID string
	// PreferWindow: see Capabilities. Zero means no window: a job's
	// prefers never hold it back.
	PreferWindow time.Duration
	// DefaultTimeout is the queue's default timeout, which bounds the
	// attempts of the jobs without a timeout of their own; 0 for none.
	DefaultTimeout time.Duration
	// After, when set, limits the claim to jobs that come after it in
	// claim order (priority, run_at, id). A claimer draining a backlog
	// passes the last job of its previous claim, so that the claim starts
	// where the last one stopped instead of walking past the index entries
	// of every job claimed since vacuum last ran. The jobs ahead of the
	// cursor that a claim skipped (a busy lock_key, a row another
	// transaction had locked, a capability) or that became available
	// later are its to find again: it drops the cursor when a wake-up
	// says that jobs may have become available ahead of it
	// (Notification.Earliest), and every so often.
	After *ClaimCursor
}

// RerunParams says what JobRerun changes besides the state.
type RerunParams struct {
	// Args, when not nil, replace the job's args.
	Args json.RawMessage
}

// TimeOutParams says what JobTimeOut takes.
type TimeOutParams struct {
	// Limit caps the jobs of one call.
	Limit int
	// RetryDelay is how long a job of queue waits before its next attempt
	// after its attempt-th attempt timed out; nil for none.
	RetryDelay func(queue string, attempt int) time.Duration
}

// ClaimCursor is a position in claim order.
type ClaimCursor struct {
	Priority int
	RunAt    time.Time
	ID       uuid.UUID
}

// CursorOf returns j's position in claim order.
func CursorOf(j *job.Job) *ClaimCursor {
	return &ClaimCursor{Priority: j.Priority, RunAt: j.RunAt, ID: j.ID}
}

// Lease identifies a claim: the job, the token its claim issued and the
// claimer. Every write of a lease holder (JobSetProgress,
// JobSetCheckpoint, JobFinish, ProcessTaskFinish) is fenced by the job's
// state (running), its current token, its deadline (an attempt past it
// holds no lease) and, when Owner is not empty, its lease owner: a write whose lease differs in any of them changes nothing
// and reports the lease lost, so that a remote worker that learnt another
// one's token still cannot write for it.
type Lease struct {
	ID    uuid.UUID
	Token uuid.UUID
	// Owner is the claimer, as the claim's ClaimParams.Owner recorded it
	// in the job's lease_owner; empty fences by the token alone.
	Owner string
}

// LeaseOf returns the lease of a claimed job: its id, token and owner.
func LeaseOf(j *job.Job) Lease {
	return Lease{ID: j.ID, Token: j.LeaseToken, Owner: j.LeaseOwner}
}

// key is the lease without its owner: the claim it names.
func (l Lease) key() Lease { return Lease{ID: l.ID, Token: l.Token} }

// HeartbeatResult is one lease's answer to JobHeartbeat.
type HeartbeatResult struct {
	Held            bool
	CancelRequested bool
}

// OutcomeStatus is what the lease holder says became of a job; see
// job.OutcomeStatus, where the state machine that applies it lives.
type OutcomeStatus = job.OutcomeStatus

// Outcomes a lease holder can report (job.Finish says what each does).
const (
	OutcomeSucceeded = job.OutcomeSucceeded
	OutcomeFailed    = job.OutcomeFailed
	OutcomeCanceled  = job.OutcomeCanceled
	OutcomeReleased  = job.OutcomeReleased
)

// Outcome is one lease holder's report for JobFinish: the lease it held
// and what it says became of the job (job.Outcome, which job.Finish
// reads). A failure's Throttle applies to the job's queue, or to its
// partition when the queue's flow.Limits.ThrottleBy says so, in the
// transaction that requeues the job.
type Outcome struct {
	Lease
	job.Outcome
	// Backoff, when not nil, times the next attempt of a retryable
	// failure without a throttle instead of RetryDelay: Backoff(queue,
	// attempt) of the job's queue and the attempt that failed (1 for the
	// first), as JobFinish reads them with the lease, so that its caller
	// need not read the job to know its queue's backoff.
	Backoff func(queue string, attempt int) time.Duration
}

// FinishResult is one outcome's effect.
type FinishResult struct {
	// Lost: the lease was not held; nothing changed.
	Lost bool
	// Repeat: the lease was not held, but the outcome repeats the one the
	// job's row remembers as the last accepted (see JobFinish); nothing
	// changed, and State is the job's current state.
	Repeat bool
	// State the job reached.
	State job.State
	// RunAt of the job when it was queued again.
	RunAt time.Time
}

// ListParams filters JobList. Zero fields do not filter.
type ListParams struct {
	Queue        string
	Kind         string
	States       []job.State
	LockKey      string
	PartitionKey string
	// IdempotencyKey finds the job submitted with that key (there is at
	// most one, found by its unique index).
	IdempotencyKey string
	// QueuesIn, when not empty, keeps only the jobs of the queues it
	// allows (job.QueuePatterns.Allows: its names, and the queues its
	// prefixes match), besides Queue: the listing of a caller limited to
	// those queues.
	QueuesIn job.QueuePatterns
	// UpdatedSince switches to feed order: jobs with updated_at >=
	// UpdatedSince, ascending by (updated_at, id). Otherwise jobs come
	// newest first (id descending).
	//
	// The feed is exact: a reader that pages it, each page's After being
	// the previous page's last job, receives every committed change (each
	// (id, updated_at) version that is still current when it is read)
	// exactly once, even while other transactions write. No change can
	// commit behind a cursor already handed out: on SQLite updated_at
	// strictly increases in commit order; on PostgreSQL a page holds only
	// rows older than every transaction still open (with the real clock;
	// see the driver for its limits). Versions that a later change
	// replaced before they were read are not delivered; the later one is.
	UpdatedSince *time.Time
	// OldestFirst lists oldest first (id ascending) instead of newest
	// first; After then continues after its id. The feed order
	// (UpdatedSince) is ascending already and ignores it.
	OldestFirst bool
	// After continues a previous page: the last job's id (and, in feed
	// order, its updated_at).
	After *Cursor
	// Limit caps the rows returned; 0 returns only the count.
	Limit int
	// NoTotal skips the count of the matches, which reads every matching
	// row (a page reads only its own): Total is then -1. A listing of a
	// large table that does not show a total sets it.
	NoTotal bool
	// ScanLimit bounds the work of a newest-first page (neither
	// UpdatedSince nor OldestFirst, which it cannot be combined with): the
	// page looks at most at the ScanLimit newest jobs after the cursor,
	// matching the filters or not, so that a filter few jobs match costs
	// one bounded range of the primary key per page instead of a walk of
	// the table. When those jobs hold fewer than Limit matches and the
	// scan did not reach the oldest job, ListResult.ScannedTo says where
	// it stopped, and the next page continues from there. 0: no bound. It
	// bounds nothing on a page without filters (every job matches) or
	// with an IdempotencyKey (its job is found by its index): see
	// ScanBounded.
	ScanLimit int
}

// Cursor marks the last job of a page.
type Cursor struct {
	ID        uuid.UUID
	UpdatedAt time.Time
}

// ListResult is one page of jobs and the total number of matches.
type ListResult struct {
	Jobs []*job.Job
	// Total is -1 when ListParams.NoTotal skipped the count.
	Total int64
	// ScannedTo is set when ListParams.ScanLimit ended the scan before the
	// page was full: the id of the oldest job it looked at (matching or
	// not). The next page continues after it (ListParams.After), and more
	// jobs may match beyond it. Nil when the page is full or the scan
	// found fewer jobs than ScanLimit (it reached the oldest one).
	ScannedTo *uuid.UUID
}

// QueueDepth is one queue's queued jobs (QueueStore.QueueDepth).
type QueueDepth struct {
	// Available counts the queued jobs that are due (run_at reached).
	Available int64
	// Scheduled counts the queued jobs due later.
	Scheduled int64
}

// QueueInfo describes one queue: its settings and its job counts.
type QueueInfo struct {
	QueueSettings
	Counts map[job.State]int64
}

// QueueSettings is what is stored of a queue besides its jobs.
type QueueSettings struct {
	Name   string
	Paused bool
	// Limits is the queue's flow control.
	Limits flow.Limits
	// ThrottledUntil is when the throttle of the whole queue ends; nil for
	// none (or one that has passed).
	ThrottledUntil *time.Time
	// Throttled lists the partitions under a throttle of their own that has
	// not passed, the soonest to end first, at most MaxThrottledListed.
	Throttled []PartitionThrottle
}

// MaxThrottledListed bounds QueueSettings.Throttled.
const MaxThrottledListed = 100

// PartitionThrottle is the throttle of one partition_key of a queue.
type PartitionThrottle struct {
	PartitionKey string
	Until        time.Time
}

// APIKey is a stored API key. The secret itself is never stored: Hash is
// its SHA-256, and Prefix, a public part of the key, finds the record.
type APIKey struct {
	ID        string
	Name      string
	Prefix    string
	Hash      []byte
	Scopes    []string
	CreatedAt time.Time
	// WorkerID is the remote worker the key belongs to, if any.
	WorkerID string
	// Queues are the queues the key is limited to; empty: every queue.
	Queues job.QueuePatterns
	// Worker is the worker WorkerID names, as KeyByPrefix read it with
	// the key (RunningJobs not counted); nil for a key of no worker, or
	// from the other calls.
	Worker *Worker
}

// CheckThrottleBy checks the arguments of
// QueueSetThrottleByIfUnset, naming the field at fault.
func CheckThrottleBy(queue, by string) error {
	if queue == "" {
		return job.Invalid("queue", "is required")
	}
	if err := job.CheckName("queue", queue); err != nil {
		return err
	}
	if by == "" {
		return job.Invalid("throttle_by", "is required")
	}
	return flow.Limits{ThrottleBy: by}.Check()
}
