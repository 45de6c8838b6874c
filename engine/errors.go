package engine

import (
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobd/jobd/job"
)

// Causes of a handler's context cancellation, read with context.Cause.
var (
	// ErrCancelRequested: someone asked to cancel the job. A handler that
	// returns an error after this ends the job canceled, not retried.
	ErrCancelRequested = errors.New("cancel requested")
	// ErrLeaseLost: the node no longer holds the job's lease (it expired
	// and the job was rescued, or it was taken over); whatever the handler
	// returns is discarded. It is job.ErrLeaseLost.
	ErrLeaseLost = job.ErrLeaseLost
	// ErrShutdown: the engine is shutting down and the shutdown timeout
	// passed; unless the handler succeeds, its job is released to the
	// queue unharmed (the attempt is not counted).
	ErrShutdown = errors.New("engine shutting down")
	// ErrTimedOut: the attempt passed its deadline (its job's timeout, or
	// its queue's): the attempt is over, whatever the handler returns but
	// a success (which the store still refuses past the deadline), and
	// the reaper retries or fails the job ("timed-out").
	ErrTimedOut = errors.New("the attempt passed its deadline")
)

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks a handler's error as final: the job fails now, whatever
// attempts it has left.
func Permanent(err error) error {
	if err == nil {
		err = errors.New("permanent failure")
	}
	return &permanentError{err: err}
}

type retryAfterError struct {
	err   error
	delay time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter makes a failed job wait d before its next attempt instead of
// its queue's backoff (when it has attempts left).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &retryAfterError{err: err, delay: max(d, 0)}
}

type throttleError struct {
	err   error
	delay time.Duration
}

func (e *throttleError) Error() string { return e.err.Error() }
func (e *throttleError) Unwrap() error { return e.err }

// Throttle says the downstream the job calls is overloaded (it answered
// 429, say): the job goes back to its queue for d without counting the
// attempt, and no job of its queue, or of its partition when the queue's
// throttle_by is partition_key, starts on any node for d
// (job.Outcome.Throttle). d is capped at job.MaxThrottle; a d below one
// millisecond is one millisecond.
func Throttle(err error, d time.Duration) error {
	if err == nil {
		err = errors.New("throttled by the downstream")
	}
	return &throttleError{err: err, delay: min(max(d, time.Millisecond), job.MaxThrottle)}
}

// maxErrorBytes caps the error text kept with a job.
const maxErrorBytes = 4096

// storableText is s as every store can keep it in a text column: its NUL
// characters and invalid UTF-8 become U+FFFD (job.CheckText).
func storableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// IsPermanent reports whether err, or an error it wraps, was marked by
// Permanent: the job it fails fails now, whatever attempts it has left.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
