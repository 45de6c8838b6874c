package job

import (
	"errors"
	"fmt"
)

// Sentinel errors shared by every layer. Compare with errors.Is.
var (
	// ErrNotFound: no job (or other row) has that id.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost: the lease token presented is no longer the job's current
	// one (the lease expired and the job was reclaimed, the job was canceled
	// or released, or it already finished). Nothing was written.
	ErrLeaseLost = errors.New("lease lost")
	// ErrWrongState: the job is not in a state that allows the operation
	// (cancel of a finished job, retry of a queued one).
	ErrWrongState = errors.New("job is in the wrong state for this operation")
	// ErrDuplicate: an operator retry would make a job an active twin of
	// another queued or running job with the same args hash.
	ErrDuplicate = errors.New("an active duplicate exists")
	// ErrIdempotencyMismatch: the idempotency key of an insert names a
	// retained job that another request made (InsertParams.
	// IdempotencyFingerprint differs). Nothing was written, and the error
	// says nothing of that job.
	ErrIdempotencyMismatch = errors.New("the idempotency key was used with a different request")
)

// ValidationError says which field of a request is wrong and why.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason)
}

// Invalid returns a *ValidationError for field.
func Invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
