package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// Kinds of the engine jobs that carry process tasks.
const (
	KindTask  = "process.task"
	KindTimer = "process.timeout"
)

// DefaultQueue is the queue of process tasks.
const DefaultQueue = "processes"

// DefaultTimeout bounds one processor call.
const DefaultTimeout = 30 * time.Second

// DefaultHistory is how many of the last events a processor is sent.
const DefaultHistory = 100

// taskAttempts is the attempts of a task job: with the default backoff
// (1 s doubling), a store that fails before the processor is called may
// stay down for about eight minutes before the task fails.
const taskAttempts = 10

// Errors a task fails with.
var (
	ErrExists   = errors.New("process exists")
	ErrInError  = errors.New("process is in error")
	ErrNotError = errors.New("process is not in error")
	ErrNoSpace  = errors.New("unknown namespace")
	ErrZombie   = errors.New("zombie detected")
	ErrNoProc   = errors.New("no such process")
)

// Namespace is a processor and its settings.
type Namespace struct {
	Name      string
	Processor Processor
	// Timeout bounds one call of the processor; 0 means DefaultTimeout.
	Timeout time.Duration
	// LeaseTTL is the lease of a task job, renewed by the engine while the
	// call runs; it is how long a dead node's task waits before the
	// process is declared a zombie. 0 means Timeout + 30s.
	LeaseTTL time.Duration
}

// Option configures a Runner.
type Option func(*Runner)

// WithClock makes the runner read time (relative timers) from c instead
// of clock.Real.
func WithClock(c clock.Clock) Option { return func(r *Runner) { r.clock = c } }

// WithObserver makes the runner report the stages of its tasks to o
// (metrics) instead of nowhere.
func WithObserver(o observe.Process) Option { return func(r *Runner) { r.obs = o } }

// Runner submits process tasks and runs them as engine jobs.
type Runner struct {
	store  store.Store
	queue  string
	spaces map[string]Namespace
	clock  clock.Clock
	obs    observe.Process
}

// TaskArgs are the args of a task job.
type TaskArgs struct {
	Namespace string          `json:"namespace"`
	ID        string          `json:"id"`
	Task      Task            `json:"task"`
	Args      json.RawMessage `json:"args,omitempty"`
}

// TaskResult is the result of a task job (and its checkpoint, once its
// changes are saved).
type TaskResult struct {
	Response json.RawMessage `json:"response,omitempty"`
}

// New makes a Runner of the namespaces and registers its job kinds with e,
// which must run queue (DefaultQueue when "").
func New(st store.Store, e *engine.Engine, queue string, spaces []Namespace, opts ...Option) (*Runner, error) {
	if queue == "" {
		queue = DefaultQueue
	}
	r := &Runner{store: st, queue: queue, spaces: make(map[string]Namespace), clock: clock.Real, obs: observe.Nop{}}
	for _, o := range opts {
		o(r)
	}
	for _, ns := range spaces {
		if ns.Name == "" || ns.Processor == nil {
			return nil, fmt.Errorf("process: a namespace needs a name and a processor")
		}
		if _, dup := r.spaces[ns.Name]; dup {
			return nil, fmt.Errorf("process: namespace %q given twice", ns.Name)
		}
		if ns.Timeout <= 0 {
			ns.Timeout = DefaultTimeout
		}
		if ns.LeaseTTL <= 0 {
			ns.LeaseTTL = ns.Timeout + 30*time.Second
		}
		r.spaces[ns.Name] = ns
	}
	if e != nil {
		engine.Register(e, KindTask, r.handle)
		engine.Register(e, KindTimer, r.handle)
	}
	return r, nil
}

// Has reports whether ns is a configured namespace.
func (r *Runner) Has(ns string) bool { _, ok := r.spaces[ns]; return ok }

// Namespaces returns the names of the runner's namespaces, sorted.
func (r *Runner) Namespaces() []string {
	names := make([]string, 0, len(r.spaces))
	for ns := range r.spaces {
		names = append(names, ns)
	}
	slices.Sort(names)
	return names
}

// LockKey is the lock_key of every task of process ns/id.
func LockKey(ns, id string) string { return "process:" + ns + "/" + id }

// IdempotencyKey is the idempotency key of a task of process ns/id that
// its caller sent with key: under the process's own prefix, which no job
// submitter may use (job.ReservedIdempotencyKey), so that a caller's key
// names that process's task and nothing else.
func IdempotencyKey(ns, id, key string) string { return LockKey(ns, id) + ":" + key }

// taskParams is the job of a task.
func (r *Runner) taskParams(kind string, a TaskArgs, runAt time.Time, idem string) (job.InsertParams, error) {
	ns, ok := r.spaces[a.Namespace]
	if !ok {
		return job.InsertParams{}, fmt.Errorf("%w %q", ErrNoSpace, a.Namespace)
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return job.InsertParams{}, err
	}
	return job.InsertParams{
		Queue: r.queue, Kind: kind, Args: raw, RunAt: runAt,
		// An attempt past the first exists when a node died (or lost its
		// lease) mid-task, and the handler then declares a zombie instead
		// of running the task again, or when the store failed before the
		// processor was called (transientf), which is retried with the
		// queue's backoff: room for an outage of several minutes.
		MaxAttempts:    taskAttempts,
		LeaseTTL:       ns.LeaseTTL,
		LockKey:        LockKey(a.Namespace, a.ID),
		IdempotencyKey: idem,
	}, nil
}

// Submit queues a task (init, call or repair) of process ns/id and returns
// its job. A non-empty idempotency key returns the job of the first
// submission with that key instead of a new one.
func (r *Runner) Submit(ctx context.Context, ns, id string, task Task, args json.RawMessage, idempotencyKey string) (*job.Job, error) {
	if idempotencyKey != "" {
		idempotencyKey = IdempotencyKey(ns, id, idempotencyKey)
	}
	p, err := r.taskParams(KindTask, TaskArgs{Namespace: ns, ID: id, Task: task, Args: args}, time.Time{}, idempotencyKey)
	if err != nil {
		return nil, err
	}
	began := r.clock.Now()
	res, err := r.store.JobInsertMany(ctx, []job.InsertParams{p})
	r.stage(observe.StageRequestPreparing, began)
	if err != nil {
		return nil, fmt.Errorf("process: submit %s of %s/%s: %w", task, ns, id, err)
	}
	return res[0].Job, nil
}

// handle runs one task job.
func (r *Runner) handle(ctx context.Context, j *engine.Job[TaskArgs]) (json.RawMessage, error) {
	if len(j.Job.Checkpoint) > 0 {
		// A previous attempt saved its changes and died before the job's
		// outcome was written: that outcome is the checkpoint.
		return j.Job.Checkpoint, nil
	}
	a := j.Args
	lease := store.LeaseOf(j.Job)
	base := store.ProcessTaskResult{Lease: lease, Namespace: a.Namespace, ID: a.ID}
	if j.Job.Attempt > 1 {
		called, err := r.mayHaveCalled(ctx, j.Job)
		if err != nil {
			return nil, err
		}
		if called {
			return r.zombie(ctx, base)
		}
	}
	ns, ok := r.spaces[a.Namespace]
	if !ok {
		return nil, engine.Permanent(fmt.Errorf("%w %q", ErrNoSpace, a.Namespace))
	}
	p, err := r.store.ProcessGet(ctx, a.Namespace, a.ID, store.HistoryPage{After: -1, Limit: DefaultHistory})
	switch {
	case a.Task == TaskInit && err == nil:
		return nil, engine.Permanent(ErrExists)
	case a.Task == TaskInit && errors.Is(err, job.ErrNotFound):
		p = &store.Process{Namespace: a.Namespace, ID: a.ID, Status: store.ProcessRunning}
	case errors.Is(err, job.ErrNotFound):
		return nil, engine.Permanent(fmt.Errorf("%w %s/%s", ErrNoProc, a.Namespace, a.ID))
	case err != nil:
		return nil, transientf("process %s/%s: %w", a.Namespace, a.ID, err)
	case a.Task == TaskRepair && p.Status != store.ProcessError:
		return nil, engine.Permanent(ErrNotError)
	case a.Task != TaskRepair && p.Status == store.ProcessError:
		return nil, engine.Permanent(fmt.Errorf("%w: %s", ErrInError, p.Detail))
	}
	if a.Task == TaskRemove {
		rm := base
		rm.Remove = true
		return r.finish(ctx, rm, nil)
	}
	began := r.clock.Now()
	resp, err := call(ctx, ns, requestOf(a, p))
	r.stage(observe.StageTaskProcessing, began)
	if err == nil {
		err = checkResponse(resp)
	}
	if err != nil {
		if a.Task == TaskInit {
			return nil, engine.Permanent(err)
		}
		failed := base
		failed.Status, failed.Detail = store.ProcessError, err.Error()
		if _, ferr := r.save(ctx, failed); ferr != nil {
			return nil, engine.Permanent(fmt.Errorf("%w; saving the error: %w", err, ferr))
		}
		return nil, engine.Permanent(err)
	}
	res := base
	res.Create = a.Task == TaskInit
	res.Status = store.ProcessRunning
	res.Events, res.AuxState, res.Metadata = resp.Events, resp.AuxState, resp.Metadata
	// A timer that fell due is spent: clear it (a still-queued timer is
	// canceled, but the one running now is this task, left to finish).
	res.UnsetTimer = a.Task == TaskTimeout
	if act := resp.Action; act != nil {
		res.UnsetTimer = res.UnsetTimer || act.UnsetTimer
		at, set := timerAt(act, r.clock.Now())
		switch {
		case set:
			kind := TaskTimeout
			if act.Remove {
				kind = TaskRemove
			}
			tp, err := r.taskParams(KindTimer, TaskArgs{Namespace: a.Namespace, ID: a.ID, Task: kind}, at, "")
			if err != nil {
				return nil, engine.Permanent(err)
			}
			res.SetTimer = &tp
		case act.Remove:
			res.Remove = true
		}
	}
	return r.finish(ctx, res, resp.Response)
}

// call calls ns's processor within its timeout. A processor that panics
// fails the call like one that answered with an error: it may have acted,
// so the task is not run again.
func call(ctx context.Context, ns Namespace, req *Request) (resp *Response, err error) {
	cctx, cancel := context.WithTimeout(ctx, ns.Timeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			resp, err = nil, fmt.Errorf("processor panicked: %v", v)
		}
	}()
	return ns.Processor.Process(cctx, req)
}

// transientf is the error of a task whose store failed before its
// processor was called: retried with the queue's backoff (its next
// attempt then knows, from the journal, that the processor was not
// called; see mayHaveCalled), unless the store refused a value for good.
func transientf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if store.Refused(err) {
		return engine.Permanent(err)
	}
	return err
}

// mayHaveCalled reports whether an earlier attempt of task job j may
// have called the processor. Every error a task returns after its
// processor was called is permanent, so an attempt that ended retried (a
// failure the handler returned: transientf) did not call it; one that
// ended rescued (its node died, or lost the lease, mid-task) may have. The
// last of the two in j's journal decides.
func (r *Runner) mayHaveCalled(ctx context.Context, j *job.Job) (bool, error) {
	evs, err := r.store.JobEvents(ctx, j.ID)
	if err != nil {
		return false, transientf("journal of task %s: %w", j.ID, err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Kind {
		case job.EventRetried:
			return false, nil
		case job.EventRescued:
			return true, nil
		}
	}
	return true, nil // no trace of how the attempt ended: assume the worst
}

// zombie puts the process of a task that may have called its processor
// already in error ("zombie detected") instead of calling it again.
func (r *Runner) zombie(ctx context.Context, base store.ProcessTaskResult) (json.RawMessage, error) {
	zombie := base
	zombie.Status, zombie.Detail = store.ProcessError, ErrZombie.Error()
	began := r.clock.Now()
	_, err := r.save(ctx, zombie)
	r.stage(observe.StageZombieCollection, began)
	if err != nil && !errors.Is(err, job.ErrNotFound) {
		return nil, engine.Permanent(fmt.Errorf("%w; saving it: %w", ErrZombie, err))
	}
	return nil, engine.Permanent(ErrZombie)
}

// finish saves a task's changes with its outcome as the job's checkpoint.
func (r *Runner) finish(ctx context.Context, res store.ProcessTaskResult, response json.RawMessage) (json.RawMessage, error) {
	out, err := json.Marshal(TaskResult{Response: response})
	if err != nil {
		return nil, engine.Permanent(err)
	}
	res.Outcome = out
	began := r.clock.Now()
	_, err = r.save(ctx, res)
	if res.Remove {
		r.stage(observe.StageProcessRemoving, began)
	} else {
		r.stage(observe.StageTaskCompletion, began)
	}
	if err != nil {
		return nil, engine.Permanent(fmt.Errorf("save task: %w", err))
	}
	return out, nil
}

// stage records a stage that began at began.
func (r *Runner) stage(s observe.Stage, began time.Time) {
	r.obs.ProcessStage(s, r.clock.Now().Sub(began))
}

// saveTimeout bounds the save of a task's changes.
const saveTimeout = 10 * time.Second

// save is ProcessTaskFinish on a context detached from the handler's:
// once the processor was called, a shutdown or a cancel of the task must
// not skip the save, or the engine would release the task and run the
// call again (a released attempt is not counted). The lease token still
// fences it.
func (r *Runner) save(ctx context.Context, res store.ProcessTaskResult) (*store.Process, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	return r.store.ProcessTaskFinish(sctx, res)
}

func timerAt(a *Action, now time.Time) (time.Time, bool) {
	switch {
	case a.SetTimer != nil:
		return *a.SetTimer, true
	case a.Timeout != nil:
		return now.Add(time.Duration(*a.Timeout * float64(time.Second))), true
	}
	return time.Time{}, false
}

func checkResponse(resp *Response) error {
	if resp == nil {
		return errors.New("processor: empty answer")
	}
	for i, e := range resp.Events {
		if !json.Valid(e) {
			return fmt.Errorf("processor: event %d is not JSON", i)
		}
	}
	return nil
}

func requestOf(a TaskArgs, p *store.Process) *Request {
	req := &Request{Task: a.Task, Args: a.Args, Process: State{
		Namespace: p.Namespace, ID: p.ID, Status: string(p.Status),
		AuxState: p.AuxState, Metadata: p.Metadata, History: []Event{},
	}}
	for _, e := range p.History {
		req.Process.History = append(req.Process.History, Event{EventID: e.EventID, Timestamp: e.At, Payload: e.Payload})
	}
	return req
}
