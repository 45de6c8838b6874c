package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// insertRounds bounds how often a batch is tried again for jobs whose
// duplicate vanished between the insert and the lookup (it finished, or
// was pruned). Each round needs such a race, so a few are plenty.
const insertRounds = 5

// JobInsertMany creates jobs in one transaction (the one s runs in, if
// any). Jobs due now wake their queues when it commits (NOTIFY); a
// wake-up is arranged for those due later. In a transaction of its own,
// a batch that no dedupe index can skip (no idempotency key, no unique
// args) travels with its BEGIN and COMMIT as one round trip; any other
// commits with the round that finds the duplicates' twins, or alone.
// See store.Store.
func (s *executor) JobInsertMany(ctx context.Context, params []job.InsertParams) ([]store.InsertResult, error) {
	batch, err := s.normalize(params)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		return []store.InsertResult{}, nil
	}
	for try := 0; ; try++ {
		var results []store.InsertResult
		err := s.transact(ctx, func(r *rounds) error {
			r.readCommitted()
			var err error
			results, err = s.insert(ctx, r, batch)
			return err
		})
		if err == nil {
			s.afterCommit(func() { s.arrangeWakeUps(results) })
			return results, nil
		}
		// Two batches that insert the same keys in opposite orders can wait
		// on each other; PostgreSQL fails one, which is then run again
		// (unless it ran in a transaction of the caller's, which the
		// deadlock aborted).
		if s.tx != nil || !deadlock(err) || try == insertRounds {
			return nil, classify(err)
		}
	}
}

// arrangeWakeUps arranges the wake-ups of the queues of the jobs created due
// later, once they are committed.
func (s *executor) arrangeWakeUps(results []store.InsertResult) {
	for _, r := range results {
		if r.Created && r.Job.RunAt.After(r.Job.CreatedAt) {
			s.delayed.At(r.Job.Queue, r.Job.RunAt)
		}
	}
}

// normalized is a batch of params that passed job.InsertParams.Normalize,
// with their args hashes.
type normalized struct {
	params []job.InsertParams
	hashes []string
}

// dedupes reports whether a dedupe index may skip a job of the batch: one
// has an idempotency key or unique args.
func (n normalized) dedupes() bool {
	for i, p := range n.params {
		if p.IdempotencyKey != "" || n.hashes[i] != "" {
			return true
		}
	}
	return false
}

// normalize validates every params and fills in its defaults, writing
// nothing, so that one bad params fails the call before any statement.
func (s *executor) normalize(params []job.InsertParams) (normalized, error) {
	n := normalized{params: make([]job.InsertParams, len(params)), hashes: make([]string, len(params))}
	for i, p := range params {
		hash, err := p.Normalize(s.maxArgs)
		if err != nil {
			return normalized{}, errorf("postgres: insert job %d: %w", i, err)
		}
		n.params[i], n.hashes[i] = p, hash
	}
	return n, nil
}

// insertBatch is a batch of normalised params as the insert's column arrays.
type insertBatch struct {
	ids                                          [][16]byte
	queues, kinds                                []string
	args                                         []json.RawMessage
	priorities, maxAttempts                      []int32
	runAts                                       []*time.Time
	leaseTTLs                                    []time.Duration
	lockKeys, partitionKeys, idemKeys, argHashes []string
	requires, prefers                            []*string // array literals; nil for none
	traceParents                                 []string
	timeouts                                     []*time.Duration // nil for none
	schedules                                    []string
	scheduledFors                                []*time.Time
	// callbackURLs stays nil (SQL NULL: none for every job) until a job
	// of the batch has one; fingerprints likewise.
	callbackURLs, fingerprints []string
}

func (b *insertBatch) add(p *job.InsertParams, argsHash string) error {
	id, err := uuid.NewV7()
	if err != nil {
		return errorf("postgres: new job id: %w", err)
	}
	b.addWithID(id, p, argsHash)
	return nil
}

// addWithID adds the job p describes, with id.
func (b *insertBatch) addWithID(id uuid.UUID, p *job.InsertParams, argsHash string) {
	b.ids = append(b.ids, id)
	b.queues = append(b.queues, p.Queue)
	b.kinds = append(b.kinds, p.Kind)
	b.args = append(b.args, p.Args)
	b.priorities = append(b.priorities, int32(*p.Priority))
	b.runAts = append(b.runAts, timePtr(p.RunAt))
	b.maxAttempts = append(b.maxAttempts, int32(p.MaxAttempts))
	b.leaseTTLs = append(b.leaseTTLs, p.LeaseTTL)
	b.lockKeys = append(b.lockKeys, p.LockKey)
	b.partitionKeys = append(b.partitionKeys, p.PartitionKey)
	b.idemKeys = append(b.idemKeys, p.IdempotencyKey)
	b.argHashes = append(b.argHashes, argsHash)
	b.requires = append(b.requires, arrayLiteral(p.Requires))
	b.prefers = append(b.prefers, arrayLiteral(p.Prefers))
	b.traceParents = append(b.traceParents, p.TraceParent)
	b.timeouts = append(b.timeouts, durationPtr(p.Timeout))
	b.schedules = append(b.schedules, p.Schedule)
	b.scheduledFors = append(b.scheduledFors, timePtr(p.ScheduledFor))
	if p.CallbackURL != "" && b.callbackURLs == nil {
		b.callbackURLs = make([]string, len(b.ids)-1, cap(b.ids))
	}
	if b.callbackURLs != nil {
		b.callbackURLs = append(b.callbackURLs, p.CallbackURL)
	}
	b.fingerprints = appendSparse(b.fingerprints, len(b.ids)-1, p.IdempotencyFingerprint)
}

// appendSparse appends v to vs, a column that stays nil (SQL NULL: none
// for every job) until a job of the batch has a value: the first one
// makes it, with "" for the n jobs before.
func appendSparse(vs []string, n int, v string) []string {
	if v != "" && vs == nil {
		vs = make([]string, n)
	}
	if vs != nil {
		vs = append(vs, v)
	}
	return vs
}

// arrayLiteral is a capability list as a PostgreSQL array literal, nil
// when empty. Capability names are tokens (job.NormalizeCapabilities)
// that need no quoting.
func arrayLiteral(names []string) *string {
	if len(names) == 0 {
		return nil
	}
	s := "{" + strings.Join(names, ",") + "}"
	return &s
}

// insert inserts the batch in one statement, in r's transaction, and
// returns, for the rows that a dedupe index skipped, the job they
// duplicate. A batch that cannot be deduped commits with its statement.
func (s *executor) insert(ctx context.Context, r *rounds, batch normalized) ([]store.InsertResult, error) {
	results := make([]store.InsertResult, len(batch.params))
	pending := make([]int, len(batch.params)) // indexes of params still without a result
	for i := range pending {
		pending[i] = i
	}
	last := !batch.dedupes()
	for round := 0; len(pending) > 0; round++ {
		if round == insertRounds {
			return nil, errorf("postgres: insert: duplicates kept vanishing after %d rounds", round)
		}
		var err error
		if pending, err = s.insertRound(ctx, r, last, batch, pending, results); err != nil {
			return nil, err
		}
	}
	if !r.done {
		if err := r.round(ctx, true, func(*pgx.Batch) {}, func(pgx.BatchResults) error { return nil }); err != nil {
			return nil, errorf("postgres: insert jobs: %w", err)
		}
	}
	return results, nil
}

// insertRound inserts the params at the indexes pending, committing r's
// transaction with the statement when last, fills in their results and
// returns the indexes that need another round.
func (s *executor) insertRound(ctx context.Context, r *rounds, last bool, batch normalized, pending []int, results []store.InsertResult) ([]int, error) {
	var b insertBatch
	for _, i := range pending {
		if err := b.add(&batch.params[i], batch.hashes[i]); err != nil {
			return nil, err
		}
	}
	var inserted []*job.Job
	err := r.round(ctx, last, func(q *pgx.Batch) {
		q.Queue(insertSQL, s.now(), b.ids, b.queues, b.kinds, b.args, b.priorities,
			b.runAts, b.maxAttempts, b.leaseTTLs, b.lockKeys, b.partitionKeys, b.idemKeys, b.argHashes,
			b.requires, b.prefers, b.traceParents, b.timeouts, b.schedules, b.scheduledFors, b.callbackURLs,
			b.fingerprints)
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		inserted, err = scanJobs(rows)
		return err
	})
	if err != nil {
		return nil, errorf("postgres: insert jobs: %w", err)
	}
	byID := make(map[[16]byte]*job.Job, len(inserted))
	for _, j := range inserted {
		byID[j.ID] = j
	}
	var skipped []int
	for n, i := range pending {
		if j, ok := byID[b.ids[n]]; ok {
			results[i] = store.InsertResult{Job: j, Created: true}
		} else {
			skipped = append(skipped, i)
		}
	}
	if len(skipped) == 0 {
		return nil, nil
	}
	if r.done {
		// Only a dedupe index skips a row, and this batch has none.
		return nil, errorf("postgres: insert: %d jobs without a dedupe key were skipped", len(skipped))
	}
	return s.insertLookup(ctx, r, batch, skipped, results)
}

// insertLookup finds the jobs that the params at the indexes skipped
// duplicate, fills in their results and returns the indexes whose
// duplicate is gone.
func (s *executor) insertLookup(ctx context.Context, r *rounds, batch normalized, skipped []int, results []store.InsertResult) ([]int, error) {
	keys := make([]*string, len(skipped))
	keyHashes := make([]*string, len(skipped))
	for n, i := range skipped {
		keys[n] = nullText(batch.params[i].IdempotencyKey)
		keyHashes[n] = nullText(batch.hashes[i])
	}
	found := make([]bool, len(skipped))
	err := r.round(ctx, false, func(q *pgx.Batch) {
		q.Queue(insertLookupSQL, keys, keyHashes)
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ord int64
			var fingerprint pgtype.Text
			var row jobRow
			if err := rows.Scan(append([]any{&ord, &fingerprint}, row.dest()...)...); err != nil {
				return err
			}
			j, err := row.job()
			if err != nil {
				return err
			}
			i := skipped[ord-1]
			if err := store.CheckTwin(&batch.params[i], j, fingerprint.String); err != nil {
				return &store.ItemError{Index: i, Err: err}
			}
			found[ord-1] = true
			results[i] = store.InsertResult{Job: j, Created: false}
		}
		return rows.Err()
	})
	if errors.Is(err, job.ErrIdempotencyMismatch) {
		return nil, errorf("postgres: insert: %w", err)
	}
	if err != nil {
		return nil, errorf("postgres: insert: find duplicates: %w", err)
	}
	var again []int
	for n, i := range skipped {
		if !found[n] {
			again = append(again, i)
		}
	}
	return again, nil
}
