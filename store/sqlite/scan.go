package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// jobColumns are the columns scanJob reads, in order: jobd_jobs' columns
// in table order, but for the journal, which only JobEvents reads, the
// idempotency fingerprint, which only the insert reads, and the columns
// of a workflow task (taskColumns), which come last as one (taskColumn).
// Every statement that returns whole jobs lists them; a test holds them
// to the migrated table and to those statements.
var jobColumns = []string{
	"id", "queue", "kind", "args", "state", "priority", "run_at",
	"attempt", "max_attempts", "lease_ttl_us",
	"lease_token", "lease_owner", "lease_expires_at", "heartbeat_at",
	"lock_key", "partition_key", "idempotency_key", "args_hash",
	"cancel_requested", "progress", "checkpoint", "result", "last_error",
	"created_at", "started_at", "finished_at", "updated_at",
	"requires", "prefers", // 002_workers
	"attempted_at",                                        // 004_journal
	"trace_parent",                                        // 005_trace_parent
	"schedule", "scheduled_for", "timeout_us", "deadline", // 006_schedules
	"rerun", "previous_state", "previous_result",
	"callback_url", // 007_webhooks
}

// taskColumns are the columns of a workflow task (013_workflows), in
// table order, which every statement that returns whole jobs selects,
// after jobColumns, as one: taskColumn.
var taskColumns = []string{"workflow_id", "workflow_ref", "run_on", "wait_for", "dependencies", "pending", "canceled_by",
	"parent_id", "child_key"}

// taskColumn is the last column scanJob reads: a task's (or a waiting
// job's) columns as one JSON array (store.DecodeTaskColumns), NULL for
// any other job, which so costs one column, not seven.
const taskColumn = "CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array( " +
	"workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END"

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanJob reads one whole jobd_jobs row. sql.ErrNoRows becomes
// job.ErrNotFound here, the one place that maps it.
func scanJob(sc scanner) (*job.Job, error) {
	var (
		j                                      job.Job
		id, state                              string
		args                                   string
		runAt, leaseTTL, createdAt, updatedAt  int64
		token, owner, lockKey, partKey, idem   sql.NullString
		argsHash, progress, checkpoint, result sql.NullString
		lastError, requires, prefers           sql.NullString
		traceParent, schedule, previousState   sql.NullString
		callbackURL, task                      sql.NullString
		previousResult                         sql.NullString
		scheduledFor, timeout, deadline        sql.NullInt64
		expiresAt, heartbeatAt, attemptedAt    sql.NullInt64
		startedAt, finishedAt                  sql.NullInt64
		cancelRequested                        int64
	)
	err := sc.Scan(
		&id, &j.Queue, &j.Kind, &args, &state, &j.Priority, &runAt,
		&j.Attempt, &j.MaxAttempts, &leaseTTL,
		&token, &owner, &expiresAt, &heartbeatAt,
		&lockKey, &partKey, &idem, &argsHash,
		&cancelRequested, &progress, &checkpoint, &result, &lastError,
		&createdAt, &startedAt, &finishedAt, &updatedAt,
		&requires, &prefers, &attemptedAt, &traceParent,
		&schedule, &scheduledFor, &timeout, &deadline, &j.Rerun, &previousState, &previousResult, &callbackURL,
		&task,
	)
	if err != nil {
		return nil, notFound(err)
	}
	if j.ID, err = uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("job id %q: %w", id, err)
	}
	if token.Valid {
		if j.LeaseToken, err = uuid.Parse(token.String); err != nil {
			return nil, fmt.Errorf("job %s: lease token: %w", id, err)
		}
	}
	if progress.Valid {
		if err := json.Unmarshal([]byte(progress.String), &j.Progress); err != nil {
			return nil, fmt.Errorf("job %s: progress: %w", id, err)
		}
	}
	j.Args = json.RawMessage(args)
	j.State = job.State(state)
	j.RunAt = fromMicro(runAt)
	j.LeaseTTL = time.Duration(leaseTTL) * time.Microsecond
	j.LeaseOwner = owner.String
	j.TraceParent = traceParent.String
	j.CallbackURL = callbackURL.String
	j.LeaseExpiresAt = fromNullMicro(expiresAt)
	j.HeartbeatAt = fromNullMicro(heartbeatAt)
	j.LockKey = lockKey.String
	j.PartitionKey = partKey.String
	j.IdempotencyKey = idem.String
	j.ArgsHash = argsHash.String
	j.CancelRequested = cancelRequested != 0
	j.Checkpoint = rawJSON(checkpoint)
	j.Result = rawJSON(result)
	j.LastError = lastError.String
	j.CreatedAt = fromMicro(createdAt)
	j.StartedAt = fromNullMicro(startedAt)
	j.FinishedAt = fromNullMicro(finishedAt)
	j.UpdatedAt = fromMicro(updatedAt)
	j.AttemptedAt = fromNullMicro(attemptedAt)
	j.Schedule = schedule.String
	j.ScheduledFor = fromNullMicro(scheduledFor)
	j.Timeout = time.Duration(timeout.Int64) * time.Microsecond
	j.Deadline = fromNullMicro(deadline)
	j.PreviousState = job.State(previousState.String)
	j.PreviousResult = rawJSON(previousResult)
	if task.Valid {
		if err := store.DecodeTaskColumns(&j, []byte(task.String)); err != nil {
			return nil, fmt.Errorf("job %s: %w", id, err)
		}
	}
	if j.Requires, err = scanList(requires); err != nil {
		return nil, fmt.Errorf("job %s: requires: %w", id, err)
	}
	if j.Prefers, err = scanList(prefers); err != nil {
		return nil, fmt.Errorf("job %s: prefers: %w", id, err)
	}
	return &j, nil
}

// scanList reads a JSON array of strings; nil for NULL or empty.
func scanList(v sql.NullString) ([]string, error) {
	if !v.Valid {
		return nil, nil
	}
	var l []string
	if err := json.Unmarshal([]byte(v.String), &l); err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, nil
	}
	return l, nil
}

// listJSON writes a list as a JSON array; NULL when empty.
func listJSON(l []string) sql.NullString {
	if len(l) == 0 {
		return sql.NullString{}
	}
	b, _ := json.Marshal(l) // strings always marshal
	return sql.NullString{String: string(b), Valid: true}
}

// scanJobs reads every row of rows and closes it.
func scanJobs(rows *sql.Rows) ([]*job.Job, error) {
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

// notFound maps "no rows" to job.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return job.ErrNotFound
	}
	return err
}

func fromMicro(us int64) time.Time { return time.UnixMicro(us).UTC() }

// microOf is t in unix microseconds, nil for the zero time.
// nullMicros is a duration in microseconds, or nil (SQL NULL) when it
// is not positive.
func nullMicros(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	us := d.Microseconds()
	return &us
}

func microOf(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	us := t.UnixMicro()
	return &us
}

// nullMicroOf is *t in unix microseconds, nil for nil.
func nullMicroOf(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	return microOf(*t)
}

func fromNullMicro(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicro(v.Int64)
	return &t
}

func rawJSON(v sql.NullString) json.RawMessage {
	if !v.Valid {
		return nil
	}
	return json.RawMessage(v.String)
}

// nullJSON stores an absent JSON value as NULL.
func nullJSON(raw json.RawMessage) sql.NullString {
	return sql.NullString{String: string(raw), Valid: len(raw) > 0}
}
