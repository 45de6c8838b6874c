package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// claimRetries bounds how often a claim that lost a race for a lock_key is
// run again. The loser's next run sees the winner's running job and skips
// that key, so a retry only repeats when yet another key was raced for.
// Two claimers that each wait for the other's key deadlock instead; one
// of them fails, and is retried the same way.
const claimRetries = 5

// claimAfterSQL is claimSQL that starts after a cursor ($9, $10, $11): a
// second statement rather than an optional condition, so that the cursor
// is an index condition of the claim index (where the scan starts), not a
// filter applied after walking from the index's first entry.
var claimAfterSQL = strings.Replace(claimSQL, claimAfterMark,
	claimAfterMark+"\n      AND (priority, run_at, id) > ($9::integer, $10::timestamptz, $11::uuid)", 1)

// claimAfterMark is the line of claim.sql after which the cursor goes.
const claimAfterMark = "      AND queue = $2"

// JobClaim moves up to params.Max available jobs to running, in one
// statement, planned with the settings of planner_ordered.sql so that the
// candidates come from an ordered walk of the claim index whatever the
// table's statistics say. In a transaction of its own the settings, the
// claim and COMMIT travel as one round trip. See store.Store.
func (s *executor) JobClaim(ctx context.Context, params store.ClaimParams) ([]*job.Job, error) {
	if params.Max <= 0 {
		return nil, nil
	}
	caps := params.Capabilities
	if caps == nil {
		caps = []string{}
	}
	query, args := claimSQL, []any{s.now(), params.Queue, params.Max, params.Owner,
		caps, nullText(params.WorkerID), params.PreferWindow, durationPtr(params.DefaultTimeout)}
	if a := params.After; a != nil {
		query, args = claimAfterSQL, append(args, a.Priority, a.RunAt, a.ID)
	}
	for try := 0; ; try++ {
		var jobs []*job.Job
		var err error
		if s.tx == nil {
			jobs, err = s.claimOnce(ctx, query, args)
		} else {
			jobs, err = s.claimInSavepoint(ctx, query, args)
		}
		if (uniqueViolation(err, "jobd_jobs_lock") || deadlock(err)) && try < claimRetries {
			continue
		}
		if err != nil {
			return nil, errorf("postgres: claim from %q: %w", params.Queue, err)
		}
		return jobs, nil
	}
}

// claimInSavepoint is claimOnce inside a transaction of the caller's (a
// claim over several queues, say), under a savepoint: a claim that lost a
// race for a lock_key, or was chosen to break a deadlock, is rolled back
// to it, leaving the caller's transaction usable for another try.
func (s *executor) claimInSavepoint(ctx context.Context, query string, args []any) ([]*job.Job, error) {
	sp, err := s.tx.Begin(ctx) // SAVEPOINT
	if err != nil {
		return nil, err
	}
	inner := *s
	inner.db, inner.tx = sp, sp
	jobs, err := inner.claimOnce(ctx, query, args)
	if err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil { // ROLLBACK TO SAVEPOINT
			return nil, errors.Join(err, rerr)
		}
		return nil, err
	}
	return jobs, sp.Commit(ctx) // RELEASE SAVEPOINT
}

// claimOnce runs one claim statement under the ordered planner settings,
// putting them back afterwards inside a transaction of the caller's.
func (s *executor) claimOnce(ctx context.Context, query string, args []any) ([]*job.Job, error) {
	var jobs []*job.Job
	err := s.transact(ctx, func(r *rounds) error {
		return r.pinnedRound(ctx, true, func(b *pgx.Batch) { b.Queue(query, args...) }, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			jobs, err = scanJobs(rows)
			return err
		})
	})
	return jobs, err
}
