package job

import (
	"slices"
	"strings"
)

// Names jobd keeps for its own work. Only jobd's own code inserts jobs in
// these queues and of these kinds (the webhook deliveries, the async
// gateway's upstream calls, the durable processes' tasks); a job a caller
// submits, a schedule's template or a re-run's new args may not name
// them, and no remote worker claims from these queues. The names are
// listed here rather than imported from their packages so that every
// package that checks a caller's input can ask without importing the
// services that own them.
const (
	// ReservedPrefix starts every queue and kind name jobd may use for a
	// service of its own, now or later ("jobd.webhooks", "jobd.webhook").
	ReservedPrefix = "jobd."
)

// reservedQueues are the internal queues named before ReservedPrefix was
// (the gateway's and the processes').
var reservedQueues = []string{"gateway", "processes"}

// reservedKinds are the internal kinds named before ReservedPrefix was.
var reservedKinds = []string{"gateway.request", "process.task", "process.timeout"}

// ReservedQueue reports whether queue is one that only jobd itself
// inserts into and works.
func ReservedQueue(queue string) bool {
	return strings.HasPrefix(queue, ReservedPrefix) || slices.Contains(reservedQueues, queue)
}

// ReservedKind reports whether kind is one that only jobd itself
// inserts.
func ReservedKind(kind string) bool {
	return strings.HasPrefix(kind, ReservedPrefix) || slices.Contains(reservedKinds, kind)
}

// reservedKeyPrefixes start the idempotency keys jobd derives for its own
// jobs: a schedule's ticks and triggers ("schedule:NAME:…", package
// schedule), a process's tasks ("process:NS/ID:…", package process), the
// async gateway's requests ("gateway:…", package gateway), and "jobd:"
// for any service of jobd's to come. A caller who could submit such a key
// could take a tick's or a task's place: the tick would link to the
// caller's job, a process call would answer with it.
var reservedKeyPrefixes = []string{"schedule:", "process:", "gateway:", "jobd:"}

// reservedLockPrefixes start the lock keys jobd derives: a process's
// tasks hold "process:NS/ID" (package process), one at a time; "jobd:"
// for any service of jobd's to come. A caller's job holding such a lock
// would stall that process.
var reservedLockPrefixes = []string{"process:", "jobd:"}

// ReservedIdempotencyKey reports whether key is one jobd derives for its
// own jobs, which a caller may not give.
func ReservedIdempotencyKey(key string) bool { return hasAnyPrefix(key, reservedKeyPrefixes) }

// ReservedLockKey reports whether key is a lock key jobd holds for its own
// jobs, which a caller may not give.
func ReservedLockKey(key string) bool { return hasAnyPrefix(key, reservedLockPrefixes) }

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// CheckCallerInsert refuses a job that a caller, not jobd's own code,
// asks for when it names what only jobd inserts: a reserved queue or
// kind (ReservedQueue, ReservedKind), an idempotency key or a lock key
// under a reserved prefix (ReservedIdempotencyKey, ReservedLockKey). The
// error is a *ValidationError naming the field ("queue", "kind",
// "idempotency_key", "lock_key"). It reads p as given (an empty queue is
// the default queue, which is free) and writes nothing.
//
// Every path by which a caller inserts a job calls it, whatever the
// caller's credential (the admin secret too): the HTTP submit and the
// dataloader's trigger, every batch insert, a schedule's template (from
// the API and from --schedules), a re-run that gives new args. jobd's own
// services (the gateway, the process runner, the webhook service, the
// schedule ticker) and embedders that call the engine or the store insert
// without it.
func CheckCallerInsert(p *InsertParams) error {
	switch {
	case ReservedQueue(p.Queue):
		return Invalid("queue", "%q is reserved for jobd's own jobs (queues starting %q, %s)", p.Queue, ReservedPrefix, quoteAll(reservedQueues))
	case ReservedKind(p.Kind):
		return Invalid("kind", "%q is reserved for jobd's own jobs (kinds starting %q, %s)", p.Kind, ReservedPrefix, quoteAll(reservedKinds))
	case ReservedIdempotencyKey(p.IdempotencyKey):
		return Invalid("idempotency_key", "must not start with %s: jobd derives such keys for its own jobs", quoteAll(reservedKeyPrefixes))
	case ReservedLockKey(p.LockKey):
		return Invalid("lock_key", "must not start with %s: jobd holds such locks for its own jobs", quoteAll(reservedLockPrefixes))
	}
	return nil
}

// CheckCallerRerun refuses new args for a re-run of j, a job of a
// reserved queue or kind (see CheckCallerInsert): jobd's own code wrote
// its args (a webhook delivery's subscription and payload, a process
// task), and a caller must not write others. A re-run without new args
// is the operator's to ask for. The error names "args".
func CheckCallerRerun(j *Job) error {
	if err := CheckCallerInsert(&InsertParams{Queue: j.Queue, Kind: j.Kind}); err != nil {
		return Invalid("args", "job %s is one of jobd's own (queue %q, kind %q): it may be re-run, but not with new args", j.ID, j.Queue, j.Kind)
	}
	return nil
}

// quoteAll lists names quoted: "a", "b" and "c".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
