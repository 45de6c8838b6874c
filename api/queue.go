package api

import "time"

// Queue describes one queue: its job counts by state, whether it is
// paused, its flow control (QueueLimits, whose members are omitted when
// unset) and its throttles.
type Queue struct {
	Name   string          `json:"name"`
	Paused bool            `json:"paused"`
	Counts map[State]int64 `json:"counts"`
	QueueLimits
	// ThrottledUntil is when the throttle of the whole queue ends: no job
	// of it starts on any node before then. Null when none.
	ThrottledUntil *time.Time `json:"throttled_until"`
	// ThrottledPartitions lists the partitions under a throttle of their
	// own (throttle_by partition_key), the soonest to end first, at most
	// 100; empty when none.
	ThrottledPartitions []PartitionThrottle `json:"throttled_partitions"`
}

// QueueLimits is a queue's flow control, the body of PUT
// /api/v1/queues/{name}, which replaces the queue's limits as a whole: a
// member left out limits nothing, and {} clears every limit. The
// database enforces them at each claim, on every node and for every
// remote worker.
type QueueLimits struct {
	// GlobalLimit caps the queue's running jobs across every node and
	// remote worker together (1 to 1 000 000).
	GlobalLimit int `json:"global_limit,omitempty"`
	// PartitionLimit caps the running jobs of each partition_key of the
	// queue; the jobs without one are one partition.
	PartitionLimit int `json:"partition_limit,omitempty"`
	// Rate caps how fast the queue's jobs start.
	Rate *QueueRate `json:"rate,omitempty"`
	// ThrottleBy is what a throttle reported by one of the queue's jobs
	// stops: the whole queue when absent, only the job's partition with
	// "partition_key".
	ThrottleBy string `json:"throttle_by,omitempty"`
}

// QueueRate is at most Limit job starts per Period, spread evenly over
// it (one start every Period/Limit) unless Burst allows that many at once
// after a quiet spell. By "partition_key" gives each partition_key its
// own allowance.
type QueueRate struct {
	Limit int `json:"limit"`
	// Period is a Go duration string ("1m", "500ms") or a number of
	// seconds, 1ms to 168h, in whole microseconds.
	Period Duration `json:"period"`
	// PeriodSeconds is Period in seconds, in every answer. A request may
	// send it instead of Period, or with it when both say the same (as an
	// answer read back does); nil in a request sends none.
	PeriodSeconds *float64 `json:"period_seconds,omitempty"`
	By            string   `json:"by,omitempty"`
	// Burst is how many starts may happen at once; absent means 1.
	Burst int `json:"burst,omitempty"`
}

// PartitionThrottle is the throttle of one partition_key of a queue.
type PartitionThrottle struct {
	PartitionKey string    `json:"partition_key"`
	Until        time.Time `json:"until"`
}

// QueueList is the answer of GET /api/v1/queues.
type QueueList struct {
	Queues []Queue `json:"queues"`
}
