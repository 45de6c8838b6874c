// Package observe holds the small interfaces through which the engine,
// the HTTP API, the async gateway and durable processes report what they
// do, for metrics and traces, and their no-op defaults (Nop). It imports
// no metrics or tracing library: internal/telemetry implements these
// interfaces with Prometheus and OpenTelemetry, and is the only package
// that imports those. The store knows nothing of either.
//
// The engine calls Jobs on its hot path: an implementation must not
// block, and should cost no more than an atomic add or a histogram
// observation per call. Callers resolve a KindRecorder once per queue and
// kind and keep it, so that no per-job call has to look labels up.
package observe

import (
	"context"
	"net/http"
	"time"

	"github.com/jobd/jobd/job"
)

// Outcome is what became of one execution of a job, as the node that
// wrote its outcome saw it.
type Outcome uint8

// The outcomes of an execution.
const (
	// Succeeded: the job succeeded.
	Succeeded Outcome = iota
	// Retried: it failed with attempts left and was queued again.
	Retried
	// Failed: it failed for good (not retryable, or no attempts left).
	Failed
	// Canceled: its cancel was honoured.
	Canceled
	// Released: the node gave it back to its queue (a shutdown), its
	// attempt not counted as a failure.
	Released
	// LeaseLost: the lease was no longer held when the outcome was
	// written; nothing was written.
	LeaseLost
)

// Outcomes lists every outcome, in order.
var Outcomes = []Outcome{Succeeded, Retried, Failed, Canceled, Released, LeaseLost}

// String is the outcome's label value.
func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Retried:
		return "retried"
	case Failed:
		return "failed"
	case Canceled:
		return "canceled"
	case Released:
		return "released"
	case LeaseLost:
		return "lease_lost"
	}
	return "unknown"
}

// OutcomeOf is the outcome of a lease holder's report whose write left
// the job in state (lost: the lease was not held).
func OutcomeOf(state job.State, status job.OutcomeStatus, lost bool) Outcome {
	switch {
	case lost:
		return LeaseLost
	case state == job.StateSucceeded:
		return Succeeded
	case state == job.StateFailed:
		return Failed
	case state == job.StateCanceled:
		return Canceled
	case status == job.OutcomeReleased:
		return Released
	}
	return Retried
}

// Jobs records the jobs this node claims and finishes: its engine's and
// those of the remote workers it serves.
type Jobs interface {
	// Kind returns the recorder of the jobs of queue and kind. Callers
	// keep it: it may cost a lookup, its methods must not.
	Kind(queue, kind string) KindRecorder
	// Claimed records one claim of queue: the jobs it returned and how
	// long the store took.
	Claimed(queue string, jobs int, took time.Duration)
	// HeartbeatBatch records one lease renewal call of leases leases.
	HeartbeatBatch(leases int)
	// FinishBatch records one call that wrote outcomes outcomes.
	FinishBatch(outcomes int, took time.Duration)
	// Rescued records jobs whose expired leases this node's reaper took
	// back.
	Rescued(jobs int)
	// TimedOut records jobs whose attempts passed their deadline that
	// this node's reaper ended (job.TimeOut).
	TimedOut(jobs int)
	// Throttled records an outcome this node wrote that throttled queue:
	// the job's handler (or remote worker) reported the downstream
	// overloaded, and the job went back to its queue without counting
	// the attempt (job.Outcome.Throttle). The execution is also recorded
	// as Retried.
	Throttled(queue string)
}

// KindRecorder records the executions of the jobs of one queue and kind.
type KindRecorder interface {
	// Started records a claimed job that starts to run, wait after it
	// became available (its run_at).
	Started(wait time.Duration)
	// Finished records an execution's outcome, ran after it started (a
	// negative ran when that is not known).
	Finished(o Outcome, ran time.Duration)
	// Abandoned records a handler still running past its job's deadline
	// and the engine's grace, which the engine stopped counting against
	// its pool.
	Abandoned()
}

// HTTP records the HTTP API's requests.
type HTTP interface {
	// Request records one answered request: the route pattern that
	// served it ("" when none did), its method and status, and how long
	// it took.
	Request(route, method string, status int, took time.Duration)
	// Subscribers adds delta to the number of open event streams (SSE).
	Subscribers(delta int)
}

// Gateway records the async gateway's calls to its upstreams.
type Gateway interface {
	// UpstreamCall records one call of upstream: its status, 0 when no
	// answer came (a connection error, a timeout), and its duration.
	UpstreamCall(upstream string, status int, took time.Duration)
}

// Webhooks records the attempts of webhook deliveries.
type Webhooks interface {
	// WebhookAttempt records one attempt of a delivery of event (an
	// api.Event… type: a bounded set), its outcome (one of the
	// Webhook… outcomes) and its duration.
	WebhookAttempt(event, outcome string, took time.Duration)
}

// Workflows records workflows, by name (a workflow's name, its kind of
// work: a bounded set for a sane submitter; the recorder caps it).
type Workflows interface {
	// WorkflowStarted records a submission that created a workflow.
	WorkflowStarted(name string)
	// WorkflowFinished records a workflow's end: the state it ended in
	// (succeeded, failed, canceled) and how long it ran, from its
	// submission (a negative took when that is not known).
	WorkflowFinished(name, state string, took time.Duration)
}

// The outcomes of a webhook delivery's attempt.
const (
	// WebhookDelivered: the receiver answered 2xx.
	WebhookDelivered = "delivered"
	// WebhookRetried: it failed and will be tried again.
	WebhookRetried = "retried"
	// WebhookFailed: it failed for good (a 4xx, its attempts used up).
	WebhookFailed = "failed"
	// WebhookRefused: a callback's address is not allowed.
	WebhookRefused = "refused"
	// WebhookSkipped: nothing to send any more (the callback's job was
	// retried or removed since, the subscription deleted).
	WebhookSkipped = "skipped"
)

// WebhookOutcomes lists every outcome of a webhook attempt.
var WebhookOutcomes = []string{WebhookDelivered, WebhookRetried, WebhookFailed, WebhookRefused, WebhookSkipped}

// Stage is a stage of a durable process's task, named after the
// progressor's histograms.
type Stage uint8

// The stages of a process task.
const (
	// StageScanning: a claim of the process tasks' queue (calls and
	// timers alike; progressor's calls and timers scanning).
	StageScanning Stage = iota
	// StageZombieCollection: marking the process of a task whose node
	// died mid-call as in error.
	StageZombieCollection
	// StageRequestPreparing: queuing a task (init, call, repair).
	StageRequestPreparing
	// StageTaskProcessing: the processor's call.
	StageTaskProcessing
	// StageTaskCompletion: saving the processor's answer.
	StageTaskCompletion
	// StageProcessRemoving: removing a process (DELETE or its remove
	// action).
	StageProcessRemoving
	// StageNotification: from a task's end to its waiting caller
	// learning of it.
	StageNotification
)

// Stages lists every stage, in order.
var Stages = []Stage{StageScanning, StageZombieCollection, StageRequestPreparing, StageTaskProcessing,
	StageTaskCompletion, StageProcessRemoving, StageNotification}

// String is the stage's name in its metric (jobd_process_<name>_seconds).
func (s Stage) String() string {
	switch s {
	case StageScanning:
		return "scanning"
	case StageZombieCollection:
		return "zombie_collection"
	case StageRequestPreparing:
		return "request_preparing"
	case StageTaskProcessing:
		return "task_processing"
	case StageTaskCompletion:
		return "task_completion"
	case StageProcessRemoving:
		return "process_removing"
	case StageNotification:
		return "notification"
	}
	return "unknown"
}

// Process records the stages of durable processes' tasks.
type Process interface {
	// ProcessStage records one stage and how long it took.
	ProcessStage(s Stage, took time.Duration)
}

// Tracer puts the executions of jobs in their submitters' traces.
type Tracer interface {
	// StartJob starts the span of one execution of j, begun at at (its
	// claim), as a child of the trace context j.TraceParent names (a
	// root when it names none). The returned context carries the span,
	// for the handler's calls.
	StartJob(ctx context.Context, j *job.Job, at time.Time) (context.Context, Span)
	// Inject writes the trace context of ctx's span into h (traceparent),
	// for an outgoing call; it leaves h alone when ctx has none.
	Inject(ctx context.Context, h http.Header)
}

// Span is one execution's span.
type Span interface {
	// End ends the span at at with the execution's outcome and, for a
	// failure, its error.
	End(o Outcome, errText string, at time.Time)
}

// Nop records nothing; it implements every interface of this package.
// Its methods do not allocate.
type Nop struct{}

var (
	_ Jobs         = Nop{}
	_ KindRecorder = Nop{}
	_ HTTP         = Nop{}
	_ Gateway      = Nop{}
	_ Process      = Nop{}
	_ Webhooks     = Nop{}
	_ Workflows    = Nop{}
	_ Tracer       = Nop{}
	_ Span         = Nop{}
)

// Kind returns Nop.
func (Nop) Kind(string, string) KindRecorder { return Nop{} }

// Claimed does nothing.
func (Nop) Claimed(string, int, time.Duration) {}

// HeartbeatBatch does nothing.
func (Nop) HeartbeatBatch(int) {}

// FinishBatch does nothing.
func (Nop) FinishBatch(int, time.Duration) {}

// Rescued does nothing.
func (Nop) Rescued(int) {}

// TimedOut does nothing.
func (Nop) TimedOut(int) {}

// Throttled does nothing.
func (Nop) Throttled(string) {}

// Abandoned does nothing.
func (Nop) Abandoned() {}

// Started does nothing.
func (Nop) Started(time.Duration) {}

// Finished does nothing.
func (Nop) Finished(Outcome, time.Duration) {}

// Request does nothing.
func (Nop) Request(string, string, int, time.Duration) {}

// Subscribers does nothing.
func (Nop) Subscribers(int) {}

// UpstreamCall does nothing.
func (Nop) UpstreamCall(string, int, time.Duration) {}

// ProcessStage does nothing.
func (Nop) ProcessStage(Stage, time.Duration) {}

// WorkflowStarted does nothing.
func (Nop) WorkflowStarted(string) {}

// WorkflowFinished does nothing.
func (Nop) WorkflowFinished(string, string, time.Duration) {}

// StartJob returns ctx and Nop.
func (Nop) StartJob(ctx context.Context, _ *job.Job, _ time.Time) (context.Context, Span) {
	return ctx, Nop{}
}

// Inject does nothing.
func (Nop) Inject(context.Context, http.Header) {}

// End does nothing.
func (Nop) End(Outcome, string, time.Time) {}

// WebhookAttempt does nothing.
func (Nop) WebhookAttempt(string, string, time.Duration) {}
