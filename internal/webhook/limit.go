package webhook

import (
	"time"

	"github.com/jobd/jobd/store"
)

// The rules of the rate limits and of the failure window, decided here
// from a limit's state as the store locked it (store.WebhookLimit), and
// written back by the caller in the same transaction.

// allow decides whether an alert at now goes out under limit l, one per
// interval: the first alert, and the first one interval or more after the
// last one sent, go out and take the count of those suppressed since
// (reset to 0); any other is suppressed and counted.
func allow(l *store.WebhookLimit, now time.Time, interval time.Duration) (send bool, suppressed int) {
	if l.SentAt != nil && now.Sub(*l.SentAt) < interval {
		l.Suppressed++
		return false, 0
	}
	suppressed = l.Suppressed
	l.SentAt, l.Suppressed = &now, 0
	return true, suppressed
}

// countFailure adds a failure at at to the window of l, a window of
// length window that opens at the first failure after the previous one
// closed, and reports whether it made count failures: the window then
// closes, so that the next pattern takes count failures more.
func countFailure(l *store.WebhookLimit, at time.Time, window time.Duration, count int) (pattern bool, failures int) {
	if l.WindowStart == nil || at.Sub(*l.WindowStart) >= window {
		l.WindowStart, l.WindowCount = &at, 0
	}
	l.WindowCount++
	if l.WindowCount < count {
		return false, l.WindowCount
	}
	failures = l.WindowCount
	l.WindowStart, l.WindowCount = nil, 0
	return true, failures
}
