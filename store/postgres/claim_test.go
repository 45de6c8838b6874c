package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestClaimLockKeyRace has four claimers on two nodes claim one job each at
// the same instant, over and over, from a queue where two jobs share each
// lock key. SKIP LOCKED sends them to different rows, often of the same
// key, so they race on the lock index: never do two jobs of one key run,
// and the loser of a race gets another key, not an error.
func TestClaimLockKeyRace(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	nodes := []*Store{openStore(t, url, clock.Real), openStore(t, url, clock.Real)}
	const rounds, claimers, keys = 30, 4, 4
	for round := range rounds {
		queue := fmt.Sprintf("race-%d", round)
		key := func(k int) string { return fmt.Sprintf("%s-L%d", queue, k) }
		var params []job.InsertParams
		for k := range keys {
			for range 2 {
				params = append(params, job.InsertParams{Queue: queue, Kind: "k", LockKey: key(k)})
			}
		}
		if _, err := nodes[0].JobInsertMany(t.Context(), params); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		claimed := make([][]*job.Job, claimers)
		errs := make([]error, claimers)
		for i := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				claimed[i], errs[i] = nodes[i%2].JobClaim(t.Context(), store.ClaimParams{Queue: queue, Max: 1, Owner: fmt.Sprint("claimer", i)})
			}()
		}
		close(start)
		wg.Wait()
		// A last claim takes whatever keys the racers left free.
		rest, err := nodes[0].JobClaim(t.Context(), store.ClaimParams{Queue: queue, Max: 10, Owner: "rest"})
		if err != nil {
			t.Fatal(err)
		}
		held := make(map[string]int)
		for _, j := range rest {
			held[j.LockKey]++
		}
		for i := range claimers {
			if errs[i] != nil {
				t.Fatalf("round %d: claimer %d: JobClaim: %v", round, i, errs[i])
			}
			for _, j := range claimed[i] {
				held[j.LockKey]++
			}
		}
		for k := range keys {
			if n := held[key(k)]; n != 1 {
				t.Fatalf("round %d: %d running jobs hold lock key %s, want 1 (%v)", round, n, key(k), held)
			}
		}
	}
}

// TestClaimLockKeyRaceLost makes the race certain: a claim in a transaction
// held open takes one of two jobs of lock key L, and JobClaim, meanwhile,
// locks the other and waits on the lock index. When the first commits,
// JobClaim's statement fails on the index; its retry must skip L and take
// the job without a key, with no error.
func TestClaimLockKeyRaceLost(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	s := openStore(t, url, clock.Real)
	now := s.clock.Now()
	_, err := s.JobInsertMany(t.Context(), []job.InsertParams{
		{Kind: "first", LockKey: "L", RunAt: now.Add(-3 * time.Second)},
		{Kind: "second", LockKey: "L", RunAt: now.Add(-2 * time.Second)},
		{Kind: "free", RunAt: now.Add(-time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	winner := connect(t, url)
	tx, err := winner.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	won, err := scanClaimed(must(tx.Query(t.Context(), claimSQL, nil, job.DefaultQueue, 1, "winner", []string{}, nil, time.Duration(0), nil)))
	if err != nil || len(won) != 1 || won[0].Kind != "first" {
		t.Fatalf("winner's claim: %v %v, want the first job", won, err)
	}

	type claimResult struct {
		jobs []*job.Job
		err  error
	}
	loser := make(chan claimResult, 1)
	go func() {
		jobs, err := s.JobClaim(t.Context(), store.ClaimParams{Queue: job.DefaultQueue, Max: 2, Owner: "loser"})
		loser <- claimResult{jobs, err}
	}()
	waitForLockWait(t, winner)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := <-loser
	if got.err != nil {
		t.Fatalf("losing claim: %v", got.err)
	}
	if len(got.jobs) != 1 || got.jobs[0].Kind != "free" {
		t.Fatalf("losing claim took %d jobs (%v), want only the free one", len(got.jobs), got.jobs)
	}
}

// waitForLockWait polls until another session of the database waits on a
// lock: the only signal PostgreSQL gives that a statement is blocked. The
// deadline only stops a hung test.
func waitForLockWait(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		err := conn.QueryRow(t.Context(), `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the second claim never waited on the lock index")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestClaimInTxLosesLockKeyRace: a claim inside a caller's transaction
// (a remote worker's claim over several queues) that loses a race for a
// lock_key is retried inside that transaction, from a savepoint, instead
// of failing it. Transaction A claims a job of key L from one queue and
// holds; B's claim from another queue picks the other job of L, and
// waits on A's entry in the lock index; once A commits, B's insert into
// the index fails, B rolls back to its savepoint, runs again, sees A's
// job running, and claims nothing — without an error.
func TestClaimInTxLosesLockKeyRace(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	s := openStore(t, url, clock.Real)
	ctx := t.Context()
	if _, err := s.JobInsertMany(ctx, []job.InsertParams{
		{Queue: "qa", Kind: "k", LockKey: "L"}, {Queue: "qb", Kind: "k", LockKey: "L"},
	}); err != nil {
		t.Fatal(err)
	}
	aClaimed, aCommit := make(chan error, 1), make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		aDone <- s.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
			jobs, err := ex.JobClaim(ctx, store.ClaimParams{Queue: "qa", Max: 1, Owner: "a"})
			if err == nil && len(jobs) != 1 {
				err = fmt.Errorf("A claimed %d jobs, want 1", len(jobs))
			}
			aClaimed <- err
			<-aCommit
			return err
		})
	}()
	if err := <-aClaimed; err != nil {
		t.Fatal(err)
	}
	type result struct {
		jobs []*job.Job
		err  error
	}
	bDone := make(chan result, 1)
	go func() {
		var r result
		r.err = s.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
			var err error
			r.jobs, err = ex.JobClaim(ctx, store.ClaimParams{Queue: "qb", Max: 1, Owner: "b"})
			return err
		})
		bDone <- r
	}()
	// B waits on A's lock-index entry: a lock wait the server reports.
	for waiting := false; !waiting; {
		err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if !waiting {
			time.Sleep(10 * time.Millisecond) // polling the server's view, not a guess at timing
		}
	}
	close(aCommit)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	r := <-bDone
	if r.err != nil {
		t.Fatalf("B's claim in a transaction failed instead of skipping the busy lock_key: %v", r.err)
	}
	if len(r.jobs) != 0 {
		t.Fatalf("B claimed %d jobs while A runs the job of their lock_key", len(r.jobs))
	}
}
