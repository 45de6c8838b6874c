package store

import (
	"time"

	"github.com/jobd/jobd/job"
)

// HealthParams bounds QueueHealth.
type HealthParams struct {
	// MaxQueues caps the queues reported (by name); 0 means
	// DefaultHealthMaxQueues.
	MaxQueues int
	// LockScan is how many due jobs, per queue and in claim order, are
	// checked for a busy lock (QueueHealth.LockBlocked); 0 means
	// DefaultHealthLockScan.
	LockScan int
}

// Defaults of HealthParams.
const (
	DefaultHealthMaxQueues = 1000
	DefaultHealthLockScan  = 1000
)

// WithDefaults returns p with its zero fields set to the defaults.
func (p HealthParams) WithDefaults() HealthParams {
	if p.MaxQueues <= 0 {
		p.MaxQueues = DefaultHealthMaxQueues
	}
	if p.LockScan <= 0 {
		p.LockScan = DefaultHealthLockScan
	}
	return p
}

// Health is what QueueHealth reports: the active jobs of every queue and
// the remote workers, cluster-wide, at one instant.
type Health struct {
	// At is the store's now when it was read.
	At time.Time
	// Queues are the queues that have queued or running jobs or a
	// setting, by name, at most HealthParams.MaxQueues of them.
	Queues []QueueHealth
	// Workers counts the remote workers by status and disabled.
	Workers []WorkerCount
}

// QueueHealth is one queue's active jobs. Finished jobs are not counted:
// their number is a matter of retention, and counting them would read the
// whole table.
type QueueHealth struct {
	Queue  string
	Paused bool
	// Queued counts the queued jobs, due or not; Scheduled those of them
	// whose run_at is after At.
	Queued, Scheduled int64
	// Running counts the running jobs.
	Running int64
	// OldestAvailable is the run_at of the queue's oldest due job (queued,
	// run_at <= At); nil when none is due. At minus it is how long that
	// job has waited for a worker.
	OldestAvailable *time.Time
	// LockBlocked counts the due jobs whose lock_key a running job holds,
	// among the first HealthParams.LockScan due jobs of the queue in
	// claim order (the jobs its next claims look at): exact while fewer
	// are due, a lower bound beyond.
	LockBlocked int64
}

// WorkerCount is how many remote workers have one status.
type WorkerCount struct {
	Status   WorkerStatus
	Disabled bool
	Count    int64
}

// PoolStats describes one connection pool of a store, for metrics.
// Drivers report theirs through PoolReporter.
type PoolStats struct {
	// Pool names the pool ("main"; SQLite: "writer" and "reader").
	Pool string
	// MaxConns caps the pool; Open counts its connections, InUse those
	// lent out and Idle the others.
	MaxConns, Open, InUse, Idle int
	// Waits counts the acquisitions that had to wait for a connection,
	// WaitDuration their total wait, since the pool opened.
	Waits        int64
	WaitDuration time.Duration
}

// PoolReporter is a store that reports its connection pools.
type PoolReporter interface {
	PoolStats() []PoolStats
}

// Throughput is how many jobs of one queue reached one final state in one
// minute (QueueThroughput).
type Throughput struct {
	Queue string
	// Minute is the start of the minute, in UTC.
	Minute time.Time
	State  job.State
	Count  int64
}
