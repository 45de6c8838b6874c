package store

import (
	"errors"
	"fmt"

	"github.com/jobd/jobd/job"
)

// The sentinels a driver marks its errors with, by their cause, so that
// callers tell a database outage and a refused value from a fault without
// knowing the driver. Compare with errors.Is.
var (
	// ErrUnavailable: the database could not be reached or dropped the
	// connection (refused, reset or closed connections, a server shutting
	// down or starting up, a connection that could not be made in time).
	// Nothing the call asked for is known to have happened, and the same
	// call may succeed once the database is back: the HTTP API answers
	// 503 unavailable with Retry-After.
	ErrUnavailable = errors.New("the database is unavailable")
	// ErrRefused: the database refused a value the call carried (text or
	// JSON it cannot store, a value over one of its limits); nothing was
	// written, and the same call fails the same way however often it is
	// sent. The store's own checks in Go (job.CheckJSON) refuse most such
	// values first, as *job.ValidationError.
	ErrRefused = errors.New("the database refused the data")
	// ErrContended: the database failed the call to break a deadlock or a
	// serialization conflict with other transactions, after the driver's
	// own retries. Nothing was written, and the same call may succeed
	// when sent again: the HTTP API answers 503 busy with Retry-After.
	ErrContended = errors.New("the database broke a conflict between transactions")
)

// Mark returns err marked with sentinel (ErrUnavailable, ErrRefused or
// ErrContended):
// errors.Is(err, sentinel) holds, the message and the chain below are
// err's. A nil err, or one already marked with sentinel, is returned as
// it is.
func Mark(err, sentinel error) error {
	if err == nil || errors.Is(err, sentinel) {
		return err
	}
	return &markedError{err: err, sentinel: sentinel}
}

// markedError is an error marked with a sentinel of this package.
type markedError struct {
	err      error
	sentinel error
}

func (e *markedError) Error() string        { return e.err.Error() }
func (e *markedError) Unwrap() error        { return e.err }
func (e *markedError) Is(target error) bool { return target == e.sentinel }

// Refused reports whether err says that the store refused the values a
// write carried, for good: its own checks (*job.ValidationError) or the
// database (ErrRefused). Sending the same write again cannot help; other
// errors (an unreachable database, a conflict between transactions) may
// pass.
func Refused(err error) bool {
	var invalid *job.ValidationError
	return errors.Is(err, ErrRefused) || errors.As(err, &invalid)
}

// ItemError is the error of one item of a batch call (JobInsertMany's
// params): Index is its position in the batch, Err what refused it.
type ItemError struct {
	Index int
	Err   error
}

func (e *ItemError) Error() string { return fmt.Sprintf("job %d: %v", e.Index, e.Err) }

// Unwrap returns Err.
func (e *ItemError) Unwrap() error { return e.Err }
