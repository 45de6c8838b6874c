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
