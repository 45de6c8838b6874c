package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// DurableStore holds durable execution (package job, durable.go, for the
// rules; docs/steps-and-children.md): the steps a running job records,
// its waits and the signals sent to it. Every write of a lease holder is
// fenced by its lease, as JobSetCheckpoint's is (see Lease).
//
// A job that recorded a step or waited is durable: the claim that hands
// it out again (JobClaim) carries what it resumes from (job.Job.Resume:
// its steps, and the signal of its last signal wait), read in the claim's
// own statement on PostgreSQL and its own transaction on SQLite; the
// claim of any other job reads nothing more.
type DurableStore interface {
	// JobStep records a step the lease holder completed (its name, result
	// and start; the attempt and the transaction's time are the row's),
	// fenced by the lease, and extends the lease as a checkpoint does. A
	// step whose name the job recorded already changes nothing and
	// returns the step recorded first (Recorded false): a holder that
	// never got the answer may send it again. A step past the job's
	// limits (StepParams.MaxSteps, MaxResult) is refused with a
	// *job.ValidationError naming the field, and writes nothing.
	// job.ErrLeaseLost when the lease is not held.
	JobStep(ctx context.Context, lease Lease, params StepParams) (*StepResult, error)
	// JobSteps returns a job's steps, in the order they were recorded;
	// none for an unknown job.
	JobSteps(ctx context.Context, id uuid.UUID) ([]job.Step, error)
	// JobWait ends the lease holder's attempt waiting (job.Wait), fenced
	// by the lease: for every child of the job to be final, for a signal
	// (with a timeout or not), or until a time. What has come already
	// (no child pending, a signal kept) queues the job at once. A job
	// whose cancel was requested ends canceled instead, as a release
	// would. It returns the job as it now is; job.ErrLeaseLost when the
	// lease is not held.
	JobWait(ctx context.Context, lease Lease, w job.WaitRequest) (*job.Job, error)
	// JobSignal sends the signal name, with payload, to a job. A job
	// waiting for that signal (waiting, or queued by a timed wait that
	// has not ended) is woken in the same transaction (job.Wake), its
	// queue's claimers woken on every node once it commits; otherwise
	// the signal is kept, and delivered when the job waits for it. A
	// second signal of one name replaces the payload of one not delivered
	// yet. job.ErrWrongState when the job is final, job.ErrNotFound when
	// there is none.
	JobSignal(ctx context.Context, id uuid.UUID, name string, payload json.RawMessage) (*SignalResult, error)
	// JobSpawn spawns children of the job lease holds, fenced by the
	// lease, in one transaction (see children.go): the children are
	// checked first (job.NormalizeChildren: a bad one fails the call
	// with a *job.ValidationError naming its field, children[i].…, and
	// nothing is written); each is then inserted as JobInsertMany inserts
	// a job, with the parent's id and its key, unless the parent has a
	// child of that key already, which it returns (Created false). A
	// parent past its limit (SpawnParams.MaxChildren, the children it
	// has included) is refused, naming children. The results are in the
	// order of the children. The parent becomes durable: the claim that
	// resumes it carries its children (job.Resume.Children).
	// job.ErrLeaseLost when the lease is not held.
	JobSpawn(ctx context.Context, lease Lease, params SpawnParams) ([]InsertResult, error)
}

// StepParams is a step a lease holder records (JobStep).
type StepParams struct {
	Name   string
	Result json.RawMessage
	// StartedAt is when the step started; zero: when it is recorded.
	StartedAt time.Time
	// MaxSteps bounds the job's steps (0: job.DefaultMaxSteps);
	// MaxResult the size of a result in bytes (0:
	// job.DefaultMaxStepResult).
	MaxSteps, MaxResult int
}

// Check refuses a step no store records, naming the field: a bad name,
// a result that is not JSON or past MaxResult.
func (p StepParams) Check() error {
	if err := job.CheckStepName("name", p.Name); err != nil {
		return err
	}
	if max := p.maxResult(); len(p.Result) > max {
		return job.Invalid("result", "is %d bytes, more than the %d a step may keep", len(p.Result), max)
	}
	return job.CheckJSON("result", p.Result)
}

func (p StepParams) maxResult() int {
	if p.MaxResult > 0 {
		return p.MaxResult
	}
	return job.DefaultMaxStepResult
}

// Limit is the most steps a job may record.
func (p StepParams) Limit() int {
	if p.MaxSteps > 0 {
		return p.MaxSteps
	}
	return job.DefaultMaxSteps
}

// TooManySteps is the error of a step past the job's limit.
func TooManySteps(limit int) error {
	return job.Invalid("name", "the job has recorded %d steps, the most it may", limit)
}

// StepResult is JobStep's answer.
type StepResult struct {
	// Step is the step as the job keeps it.
	Step job.Step
	// Recorded: this call recorded it (false: a step of that name was
	// recorded before, which Step is).
	Recorded bool
	// CancelRequested: the job's cancel was requested.
	CancelRequested bool
}

// SignalResult is JobSignal's answer.
type SignalResult struct {
	// Job is the job as the signal left it.
	Job *job.Job
	// Delivered: the signal woke the job; false: it is kept until the job
	// waits for it.
	Delivered bool
}

// SignalDetail is the journal detail of a wake by the signal name.
func SignalDetail(name string) string {
	b, _ := json.Marshal(name)
	return "signal " + string(b)
}

// SignalWakes reports whether a signal sent to j wakes it: j last waited
// for that signal (waitsFor, its signal_wait), the signal kept for it
// before this one was not delivered already (delivered: it was, and j
// was woken by it), and j waits for it now: waiting for it, or queued
// by a timed wait for it that has not ended (job.InTimedSignalWait of
// last, the last entry its journal stores). A job queued for any other
// reason — a retry after its timed wait timed out, a sleep since — is
// not woken: the signal is kept for its next wait.
func SignalWakes(j *job.Job, waitsFor, name string, delivered bool, last job.Event) bool {
	if waitsFor != name || delivered {
		return false
	}
	switch j.State {
	case job.StateWaiting:
		return j.WaitFor == job.WaitSignal
	case job.StateQueued:
		return job.InTimedSignalWait(last, name)
	}
	return false
}

// DecodeResume decodes what a claimed durable job resumes from, as a
// driver's claim aggregates it: {"steps": [{"name", "result",
// "attempt", "started_at", "finished_at"}], "children": [{"key", "id",
// "state", "result", "error"}], "signal": {"name", "payload",
// "delivered"}} (each null for none); nil for a job that is not durable.
func DecodeResume(raw []byte) (*job.Resume, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var doc struct {
		Steps []struct {
			Name       string          `json:"name"`
			Result     json.RawMessage `json:"result"`
			Attempt    int             `json:"attempt"`
			StartedAt  time.Time       `json:"started_at"`
			FinishedAt time.Time       `json:"finished_at"`
		} `json:"steps"`
		Children []struct {
			Key    string          `json:"key"`
			ID     uuid.UUID       `json:"id"`
			State  job.State       `json:"state"`
			Result json.RawMessage `json:"result"`
			Error  *string         `json:"error"`
		} `json:"children"`
		Signal *struct {
			Name      string          `json:"name"`
			Payload   json.RawMessage `json:"payload"`
			Delivered bool            `json:"delivered"`
		} `json:"signal"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decode what it resumes from: %w", err)
	}
	r := &job.Resume{}
	for _, s := range doc.Steps {
		if r.Steps == nil {
			r.Steps = make(map[string]job.Step, len(doc.Steps))
		}
		r.Steps[s.Name] = job.Step{Name: s.Name, Result: nullJSON(s.Result), Attempt: s.Attempt,
			StartedAt: s.StartedAt.UTC(), FinishedAt: s.FinishedAt.UTC()}
	}
	for _, c := range doc.Children {
		if r.Children == nil {
			r.Children = make(map[string]job.ChildEnd, len(doc.Children))
		}
		ce := job.ChildEnd{ID: c.ID, State: c.State, Result: nullJSON(c.Result)}
		if c.Error != nil {
			ce.Error = *c.Error
		}
		r.Children[c.Key] = ce
	}
	if g := doc.Signal; g != nil {
		r.Signal = &job.Signal{Name: g.Name, TimedOut: !g.Delivered}
		if g.Delivered {
			r.Signal.Payload = nullJSON(g.Payload)
		}
	}
	return r, nil
}

// nullJSON is raw, or nil for none (JSON null included).
func nullJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}
