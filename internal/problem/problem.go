// Package problem is jobd's one mapping from errors to RFC 9457 problem
// documents, and its one writer of them, shared by the HTTP API (httpapi)
// and the async gateway (gateway). Problems are keyed by the kind of the
// error (a sentinel of package job or process, a validation error, an
// *Error of a given type), never by status: the table of kinds, their
// statuses, titles and classes, is api.ProblemKinds, which the Go client
// reads back to classify the errors it returns.
package problem

import (
	"errors"
	"fmt"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// Error is an error meant for the caller: it is answered as the problem of
// Type (one of the api.Problem* URIs) with its Detail and Field.
type Error struct {
	Type   string
	Field  string
	Detail string
}

// Error returns the detail.
func (e *Error) Error() string { return e.Detail }

// Errorf returns an *Error of typ naming field ("" for none).
func Errorf(typ, field, format string, args ...any) *Error {
	return &Error{Type: typ, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// ErrUnavailable marks an error of a database that does not answer: an
// error that wraps it is answered 503 of type api.ProblemUnavailable,
// with Retry-After, instead of a 500. It is the stores' sentinel, which
// every driver marks its outages with.
var ErrUnavailable = store.ErrUnavailable

// unavailable reports whether err says the database does not answer.
func unavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// unavailableDetail is the detail of every unavailable answer: the
// driver's error stays in the log, out of the answer.
const unavailableDetail = "the database does not answer; retry after the Retry-After delay"

// refusedDetail is the detail of a value the database refused.
const refusedDetail = "the database refused a value of the request (text or JSON it cannot store, or a value over one of its limits)"

// New returns the problem of type typ, with the status and title of its
// kind. A type that is not in api.ProblemKinds is a bug of the caller: it
// is answered as an internal error, with the detail kept.
func New(typ, field, detail string) *api.Problem {
	k, ok := api.LookupProblem(typ)
	if !ok {
		k, _ = api.LookupProblem(api.ProblemInternal)
	}
	return &api.Problem{Type: k.Type, Title: k.Title, Status: k.Status, Detail: detail, Field: field}
}

// FromError returns the problem err is answered with. An error of no known
// kind is an internal error: its text stays out of the problem (the
// writer logs it).
func FromError(err error) *api.Problem {
	if p, ok := fromError(err); ok {
		return p
	}
	return New(api.ProblemInternal, "", "internal server error")
}

// fromError maps err by its kind; false when it is of none.
func fromError(err error) (*api.Problem, bool) {
	var e *Error
	var p *api.Problem
	var verr *job.ValidationError
	switch {
	case errors.As(err, &e):
		return New(e.Type, e.Field, e.Detail), true
	case errors.As(err, &p):
		cp := *p
		return &cp, true
	case errors.As(err, &verr):
		return New(api.ProblemValidation, verr.Field, verr.Error()), true
	case errors.Is(err, job.ErrLeaseLost):
		return New(api.ProblemLeaseLost, "lease_token", leaseLostDetail), true
	case errors.Is(err, job.ErrNotFound):
		return New(api.ProblemNotFound, "", "not found"), true
	case errors.Is(err, job.ErrWrongState):
		return New(api.ProblemWrongState, "", job.ErrWrongState.Error()), true
	case errors.Is(err, store.ErrScheduleConfigured):
		return New(api.ProblemWrongState, "name", store.ErrScheduleConfigured.Error()), true
	case errors.Is(err, job.ErrIdempotencyMismatch):
		return New(api.ProblemIdempotencyMismatch, "idempotency_key", IdempotencyMismatchDetail), true
	case errors.Is(err, job.ErrDuplicate):
		return New(api.ProblemDuplicate, "", job.ErrDuplicate.Error()), true
	case errors.Is(err, process.ErrProcessor):
		return New(api.ProblemProcessorFailed, "", err.Error()+"; the process is in error until a repair succeeds"), true
	case errors.Is(err, process.ErrNoProc), errors.Is(err, process.ErrNoSpace):
		return New(api.ProblemNotFound, "", err.Error()), true
	case errors.Is(err, process.ErrExists), errors.Is(err, process.ErrInError),
		errors.Is(err, process.ErrNotError), errors.Is(err, process.ErrZombie):
		return New(api.ProblemWrongState, "", err.Error()), true
	case unavailable(err):
		return New(api.ProblemUnavailable, "", unavailableDetail), true
	case errors.Is(err, store.ErrContended):
		return New(api.ProblemBusy, "", contendedDetail), true
	case errors.Is(err, store.ErrRefused):
		return New(api.ProblemValidation, "", refusedDetail), true
	}
	return nil, false
}

// contendedDetail is the detail of a call the database failed to break a
// conflict between transactions (store.ErrContended).
const contendedDetail = "the database failed this request to break a conflict with others at the same instant; nothing was written: send it again"

// IdempotencyMismatchDetail is the detail of every idempotency-mismatch
// answer: it names nothing of the job the key names (no id, no state).
const IdempotencyMismatchDetail = "this idempotency key was used before with a different request (another queue, kind, args or other member that decides the job); send the same request again, or use a new key"

// leaseLostDetail is the detail of every lease-lost answer.
const leaseLostDetail = "the lease is not held: it expired and the job was claimed again, or the job was canceled or finished"
