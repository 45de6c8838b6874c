package postgres

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// jobRow receives the columns every statement that returns whole jobs
// selects, in this order:
//
//	id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
//	lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
//	idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
//	last_error, created_at, started_at, finished_at, updated_at,
//	requires, prefers, attempted_at, trace_parent,
//	schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
//	CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
//	    workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
//
// The last is the columns of a workflow task, or of a waiting job, as
// one JSON array (store.DecodeTaskColumns), and one NULL for any other job: a job
// outside workflows costs the client one column more, not seven.
// The journal column is not among them: only JobEvents reads it.
type jobRow struct {
	j                                                    job.Job
	state                                                string
	leaseToken                                           pgtype.UUID
	leaseOwner, lockKey, partitionKey, idemKey, argsHash pgtype.Text
	lastError, traceParent, callbackURL                  pgtype.Text
	args, progress, checkpoint, result                   []byte
	schedule, previousState                              pgtype.Text
	timeout                                              *time.Duration
	previousResult                                       []byte
	task                                                 []byte
}

// dest returns the scan destinations, in column order.
func (r *jobRow) dest() []any {
	j := &r.j
	return []any{
		uuidDest(&j.ID), &j.Queue, &j.Kind, &r.args, &r.state, &j.Priority, &j.RunAt, &j.Attempt, &j.MaxAttempts, &j.LeaseTTL,
		&r.leaseToken, &r.leaseOwner, &j.LeaseExpiresAt, &j.HeartbeatAt, &r.lockKey, &r.partitionKey,
		&r.idemKey, &r.argsHash, &j.CancelRequested, &r.progress, &r.checkpoint, &r.result,
		&r.lastError, &j.CreatedAt, &j.StartedAt, &j.FinishedAt, &j.UpdatedAt,
		&j.Requires, &j.Prefers, &j.AttemptedAt, &r.traceParent,
		&r.schedule, &j.ScheduledFor, &r.timeout, &j.Deadline, &j.Rerun, &r.previousState, &r.previousResult, &r.callbackURL,
		&r.task,
	}
}

// job converts the scanned row; NULL keys become "".
func (r *jobRow) job() (*job.Job, error) {
	j := r.j
	j.State = job.State(r.state)
	j.Args = r.args
	j.LeaseToken = r.leaseToken.Bytes
	j.LeaseOwner = r.leaseOwner.String
	j.LockKey = r.lockKey.String
	j.PartitionKey = r.partitionKey.String
	j.IdempotencyKey = r.idemKey.String
	j.ArgsHash = r.argsHash.String
	j.LastError = r.lastError.String
	j.TraceParent = r.traceParent.String
	j.Schedule = r.schedule.String
	if r.timeout != nil {
		j.Timeout = *r.timeout
	}
	j.PreviousState = job.State(r.previousState.String)
	j.PreviousResult = r.previousResult
	j.CallbackURL = r.callbackURL.String
	j.Checkpoint = r.checkpoint
	j.Result = r.result
	if r.task != nil {
		if err := store.DecodeTaskColumns(&j, r.task); err != nil {
			return nil, errorf("postgres: job %s: %w", j.ID, err)
		}
	}
	if r.progress != nil {
		if err := json.Unmarshal(r.progress, &j.Progress); err != nil {
			return nil, errorf("postgres: job %s: decode progress: %w", j.ID, err)
		}
	}
	return &j, nil
}

// scanJob reads one whole job from row.
func scanJob(row pgx.Row) (*job.Job, error) {
	var r jobRow
	if err := row.Scan(r.dest()...); err != nil {
		return nil, err
	}
	return r.job()
}

// scanJobs reads whole jobs until rows ends, and closes rows.
func scanJobs(rows pgx.Rows) ([]*job.Job, error) {
	defer rows.Close()
	var jobs []*job.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// pgUUID and uuidDest hand uuids to pgx as [16]byte, which it encodes and
// decodes directly: a uuid.UUID would go through driver.Valuer and
// sql.Scanner, by way of text, at a cost a batch of a thousand notices.
func pgUUID(id uuid.UUID) [16]byte { return id }

func uuidDest(id *uuid.UUID) *[16]byte { return (*[16]byte)(id) }

// nullText maps "" to SQL NULL, for optional filters.
func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// durationPtr returns nil (SQL NULL) for a duration that is not positive.
func durationPtr(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}

// timePtr returns nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
