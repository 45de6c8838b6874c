package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// claimAfterSQL and claimLimitedAfterSQL are claimSQL and claimLimitedSQL
// that start after a cursor ($9, $10, $11): a second statement rather
// than an optional condition, so that the cursor is an index condition of
// the claim index (where the scan starts), not a filter applied after
// walking from the index's first entry.
var (
	claimAfterSQL        = withCursor(claimSQL)
	claimLimitedAfterSQL = withCursor(claimLimitedSQL)
)

// claimAfterMark is the line of claim.sql and claim_limited.sql after
// which the cursor goes.
const claimAfterMark = "      AND queue = $2\n"

func withCursor(query string) string {
	if strings.Count(query, claimAfterMark) != 1 {
		panic("postgres: a claim statement without exactly one line " + strings.TrimSpace(claimAfterMark))
	}
	return strings.Replace(query, claimAfterMark,
		claimAfterMark+"      AND (priority, run_at, id) > ($9::integer, $10::timestamptz, $11::uuid)\n", 1)
}

// flowLockSkipSQL is flow_lock.sql that does not wait for another claim
// of the queue: for a claim inside a caller's transaction that holds the
// lock of another queue already (see claimPlan.wait).
var flowLockSkipSQL = strings.Replace(flowLockSQL, "    FOR UPDATE\n", "    FOR UPDATE SKIP LOCKED\n", 1)

// JobClaim moves up to params.Max available jobs to running, in one
// statement, planned with the settings of planner_ordered.sql so that the
// candidates come from an ordered walk of the claim index whatever the
// table's statistics say. In a transaction of its own the settings, the
// claim and COMMIT travel as one round trip. A limited queue's claim
// (flow.Limits; see limitedQueues for how a node knows) takes the queue's
// lock first, in the same round trip (flow_lock.sql, claim_limited.sql).
// See store.Store.
func (s *executor) JobClaim(ctx context.Context, params store.ClaimParams) ([]*job.Job, error) {
	if params.Max <= 0 {
		return nil, nil
	}
	limited, reload := s.limited.route(params.Queue, s.clock.Now())
	p := s.plan(params, limited, reload)
	res, err := s.claim(ctx, p)
	if err == nil && reload {
		s.limited.read(res.limitedQueues)
	}
	// Nothing claimed by the unlimited path, and the queue turned out to
	// be limited: claim by its path at once.
	if err == nil && !limited && len(res.jobs) == 0 && slices.ContainsFunc(res.limitedQueues, func(q limitedQueue) bool { return q.name == params.Queue }) {
		p = s.plan(params, true, false)
		res, err = s.claim(ctx, p)
	}
	if err != nil {
		return nil, errorf("postgres: claim from %q: %w", params.Queue, err)
	}
	switch {
	case res.locked:
		// Its limits as the lock read them: lifted, or changed.
		s.limited.set(params.Queue, res.stillLimited, res.counted)
	case p.queue != "" && p.wait:
		s.limited.set(params.Queue, false, false) // it has no settings (a view of a transaction rolled back)
	}
	if len(res.jobs) < params.Max {
		s.limited.claimedShort()
	}
	return res.jobs, nil
}

// claimPlan is what one claim sends.
type claimPlan struct {
	query string // claim.sql or claim_limited.sql, with or without a cursor
	args  []any
	// queue is the queue whose lock a limited claim takes first
	// (flow_lock.sql); "" for an unlimited claim.
	queue string
	// wait for the queue's lock, or, when false, claim nothing if another
	// claim holds it. A claim inside a caller's transaction that already
	// holds the lock of a queue does not wait for another: two such
	// transactions locking two queues in opposite orders would deadlock.
	wait bool
	// reload reads the names of the limited queues too (flow_limited.sql).
	reload bool
}

// claimResult is what one claim got.
type claimResult struct {
	jobs []*job.Job
	// limitedQueues, for a plan that reloads, are the limited queues.
	limitedQueues []limitedQueue
	// locked: the limited claim held its queue's lock; stillLimited: the
	// queue was limited when it took it; counted: it counted its running
	// jobs then.
	locked, stillLimited, counted bool
}

// plan makes the plan of a claim of params, by the limited path or not.
func (s *executor) plan(params store.ClaimParams, limited, reload bool) claimPlan {
	caps := params.Capabilities
	if caps == nil {
		caps = []string{}
	}
	p := claimPlan{query: claimSQL, args: []any{s.now(), params.Queue, params.Max, params.Owner,
		caps, nullText(params.WorkerID), params.PreferWindow, durationPtr(params.DefaultTimeout)}, reload: reload}
	if limited {
		p.query, p.queue, p.wait = claimLimitedSQL, params.Queue, s.flowLocked == nil || !*s.flowLocked
	}
	if a := params.After; a != nil {
		p.args = append(p.args, a.Priority, a.RunAt, a.ID)
		p.query = claimAfterSQL
		if limited {
			p.query = claimLimitedAfterSQL
		}
	}
	return p
}

// claim runs a plan, again when it lost a race for a lock_key or was
// chosen to break a deadlock (see claimRetries).
func (s *executor) claim(ctx context.Context, p claimPlan) (claimResult, error) {
	for try := 0; ; try++ {
		var (
			res claimResult
			err error
		)
		if s.tx == nil {
			res, err = s.claimOnce(ctx, p)
		} else {
			res, err = s.claimInSavepoint(ctx, p)
		}
		if (uniqueViolation(err, "jobd_jobs_lock") || deadlock(err)) && try < claimRetries {
			continue
		}
		if err == nil && res.locked && s.flowLocked != nil {
			*s.flowLocked = true
		}
		return res, err
	}
}

// claimInSavepoint is claimOnce inside a transaction of the caller's (a
// claim over several queues, say), under a savepoint: a claim that lost a
// race for a lock_key, or was chosen to break a deadlock, is rolled back
// to it, leaving the caller's transaction usable for another try (and
// the queue's lock, and jobd.flow_lock, as they were before it).
func (s *executor) claimInSavepoint(ctx context.Context, p claimPlan) (claimResult, error) {
	sp, err := s.tx.Begin(ctx) // SAVEPOINT
	if err != nil {
		return claimResult{}, err
	}
	inner := *s
	inner.db, inner.tx = sp, sp
	res, err := inner.claimOnce(ctx, p)
	if err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil { // ROLLBACK TO SAVEPOINT
			return claimResult{}, errors.Join(err, rerr)
		}
		return claimResult{}, err
	}
	return res, sp.Commit(ctx) // RELEASE SAVEPOINT
}

// errClaimIsolation is the error of a limited claim in a transaction that
// is not READ COMMITTED (a caller's, see WithTx), which could not see the
// claims committed before it took the queue's lock.
var errClaimIsolation = errors.New("a claim of a limited queue needs a READ COMMITTED transaction")

// claimOnce runs one claim under the ordered planner settings, putting
// them back afterwards inside a transaction of the caller's: in one round
// trip, the queue's lock first for a limited claim, the names of the
// limited queues after it when the plan reloads them. A transaction of
// its own that takes a queue's lock is READ COMMITTED whatever the
// server's default.
func (s *executor) claimOnce(ctx context.Context, p claimPlan) (claimResult, error) {
	var res claimResult
	err := s.transact(ctx, func(r *rounds) error {
		if p.queue != "" {
			r.readCommitted()
		}
		var isolation string
		return r.pinnedRound(ctx, true, func(b *pgx.Batch) {
			if p.queue != "" {
				lock := flowLockSQL
				if !p.wait {
					lock = flowLockSkipSQL
				}
				b.Queue(lock, p.queue)
			}
			b.Queue(p.query, p.args...)
			if p.reload {
				b.Queue(flowLimitedSQL)
			}
		}, func(br pgx.BatchResults) error {
			if p.queue != "" {
				var limited, counted *bool
				if err := br.QueryRow().Scan(&isolation, &limited, &counted); err != nil {
					return fmt.Errorf("lock the queue: %w", err)
				}
				res.locked, res.stillLimited = limited != nil, limited != nil && *limited
				res.counted = res.stillLimited && counted != nil && *counted
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			if res.jobs, err = scanClaimed(rows); err != nil {
				return err
			}
			if p.queue != "" && isolation != "read committed" {
				return fmt.Errorf("%w (this one is %s)", errClaimIsolation, isolation)
			}
			if p.reload {
				rows, err := br.Query()
				if err != nil {
					return fmt.Errorf("read the limited queues: %w", err)
				}
				res.limitedQueues, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (limitedQueue, error) {
					var q limitedQueue
					return q, row.Scan(&q.name, &q.counted)
				})
				if err != nil {
					return fmt.Errorf("read the limited queues: %w", err)
				}
			}
			return nil
		})
	})
	return res, err
}
