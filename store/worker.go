package store

import (
	"encoding/json"
	"time"

	"github.com/jobd/jobd/job"
)

// WorkerStatus is what a remote worker is doing, as the registry knows it.
type WorkerStatus string

// The statuses a worker record holds. A disabled worker keeps its status;
// Worker.Disabled says it is disabled.
const (
	// WorkerActive: running jobs, with room for more.
	WorkerActive WorkerStatus = "active"
	// WorkerIdle: running nothing.
	WorkerIdle WorkerStatus = "idle"
	// WorkerBusy: every slot taken.
	WorkerBusy WorkerStatus = "busy"
	// WorkerOffline: no heartbeat for the offline period; set by the
	// leader, cleared by the worker's next heartbeat or claim.
	WorkerOffline WorkerStatus = "offline"
)

// Valid reports whether a worker may report s about itself (every status
// but offline).
func (s WorkerStatus) Valid() bool {
	return s == WorkerActive || s == WorkerIdle || s == WorkerBusy
}

// Worker is a remote worker of the registry.
type Worker struct {
	ID           string
	Name         string
	Capabilities []string
	// Queues are the queues the worker may claim from; empty: every
	// queue but jobd's own (job.ReservedQueue), which no worker claims.
	Queues job.QueuePatterns
	// Metadata is a JSON object, given at registration.
	Metadata        json.RawMessage
	Status          WorkerStatus
	Disabled        bool
	LastHeartbeatAt *time.Time
	JobsDone        int64
	JobsFailed      int64
	// RunningJobs counts the jobs whose lease the worker holds (filled by
	// WorkerList).
	RunningJobs int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}
