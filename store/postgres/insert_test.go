package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/storetest"
)

// TestInsertTxRollback: jobs inserted in a transaction that rolls back
// leave nothing behind: no job, no journal entry.
func TestInsertTxRollback(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	s := openStore(t, url, clock.Real)
	conn := connect(t, url)

	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.WithTx(tx).JobInsertMany(t.Context(), []job.InsertParams{{Kind: "a"}, {Kind: "b", IdempotencyKey: "k"}})
	if err != nil {
		t.Fatalf("WithTx(tx).JobInsertMany: %v", err)
	}
	if len(res) != 2 || !res[0].Created || !res[1].Created {
		t.Fatalf("WithTx(tx).JobInsertMany results %+v, want two created jobs", res)
	}
	if _, err := s.JobGet(t.Context(), res[0].Job.ID); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("JobGet before commit: %v, want job.ErrNotFound", err)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	var jobs int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM jobd_jobs").Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	events := journalEntries(t, s)
	if jobs != 0 || events != 0 {
		t.Fatalf("after rollback: %d jobs, %d events; want none", jobs, events)
	}
	// The key is free again.
	again, err := s.JobInsertMany(t.Context(), []job.InsertParams{{Kind: "b", IdempotencyKey: "k"}})
	if err != nil || !again[0].Created {
		t.Fatalf("insert after rollback: %+v %v, want a new job", again, err)
	}
}

// TestInsertTxCommitWakes: the wake-up of an insert in the caller's transaction (WithTx) arrives only once
// the caller commits.
func TestInsertTxCommitWakes(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	s := openStore(t, url, clock.Real)
	wakes := listenUntilReady(t, s)
	conn := connect(t, url)

	err := pgx.BeginFunc(t.Context(), conn, func(tx pgx.Tx) error {
		if _, err := s.WithTx(tx).JobInsertMany(t.Context(), []job.InsertParams{{Queue: "tx-queue", Kind: "k"}}); err != nil {
			return err
		}
		// Nothing is delivered while the transaction is open; a wake-up
		// sent afterwards from outside it overtakes the insert's.
		if err := s.Wake(t.Context(), "marker"); err != nil {
			return err
		}
		for q := range wakes {
			switch q {
			case "tx-queue":
				t.Fatal("wake-up for the insert before its transaction committed")
			case "marker":
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("insert in a transaction: %v", err)
	}
	waitWake(t, wakes, "tx-queue")
}

// listenUntilReady runs s.Listen until t ends and returns its wake-ups once
// LISTEN is in effect (a Wake it sends came back).
func listenUntilReady(t *testing.T, s *Store) <-chan string {
	t.Helper()
	wakes := make(chan string, 1024)
	done := make(chan struct{})
	ctx := t.Context()
	go func() {
		defer close(done)
		err := s.Listen(ctx, func(n store.Notification) {
			if n.CancelJob != uuid.Nil {
				return
			}
			select {
			case wakes <- n.Queue:
			default: // a test that needs them all reads them in time
			}
		})
		if err != nil {
			t.Errorf("Listen: %v", err)
		}
	}()
	t.Cleanup(func() { <-done })
	pollWake(t, s, wakes, "ready")
	return wakes
}

// pollWake sends Wake(queue) until the listener reports queue. The
// deadline only stops a hung test.
func pollWake(t *testing.T, s *Store, wakes <-chan string, queue string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := s.Wake(t.Context(), queue); err != nil {
			t.Fatalf("Wake: %v", err)
		}
		select {
		case q := <-wakes:
			if q == queue {
				drain(wakes)
				return
			}
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no wake-up for %q", queue)
		}
	}
}

// waitWake waits for the listener to report queue, skipping others.
func waitWake(t *testing.T, wakes <-chan string, queue string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case q := <-wakes:
			if q == queue {
				return
			}
		case <-deadline:
			t.Fatalf("no wake-up for %q", queue)
		}
	}
}

func drain(wakes <-chan string) {
	for {
		select {
		case <-wakes:
		default:
			return
		}
	}
}

// TestInsertDeadlockRetried: two transactions insert the same idempotency
// keys in opposite orders, so each waits for the other. PostgreSQL fails
// the one that waited first, JobInsertMany, which runs its batch again and
// finds the other's jobs.
func TestInsertDeadlockRetried(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	s := openStore(t, url, clock.Real)
	conn := connect(t, url)
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	// The waiter whose deadlock_timeout passes first looks for the
	// deadlock and fails; on a loaded machine that could be tx, which
	// starts waiting later but may be scheduled sooner. Only
	// JobInsertMany's session is left to find it.
	if _, err := tx.Exec(t.Context(), "SET LOCAL deadlock_timeout = '1min'"); err != nil {
		t.Fatal(err)
	}
	first, err := s.WithTx(tx).JobInsertMany(t.Context(), []job.InsertParams{{Kind: "k", IdempotencyKey: "one"}})
	if err != nil {
		t.Fatal(err)
	}

	type result struct {
		res []store.InsertResult
		err error
	}
	other := make(chan result, 1)
	go func() {
		res, err := s.JobInsertMany(t.Context(), []job.InsertParams{
			{Kind: "k", IdempotencyKey: "two"}, {Kind: "k", IdempotencyKey: "one"}})
		other <- result{res, err}
	}()
	waitForLockWait(t, connect(t, url)) // JobInsertMany waits for "one"

	second, err := s.WithTx(tx).JobInsertMany(t.Context(), []job.InsertParams{{Kind: "k", IdempotencyKey: "two"}})
	if err != nil {
		t.Fatalf("WithTx(tx).JobInsertMany of the second key: %v", err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := <-other
	if got.err != nil {
		t.Fatalf("JobInsertMany: %v, want it retried after the deadlock", got.err)
	}
	for i, want := range []*job.Job{second[0].Job, first[0].Job} {
		if r := got.res[i]; r.Created || r.Job.ID != want.ID {
			t.Fatalf("JobInsertMany result %d: created %v id %s, want the committed job %s", i, r.Created, r.Job.ID, want.ID)
		}
	}
}

// TestUnfingerprintedKey: a job stored before migration 010 (no
// idempotency fingerprint) matches any request of its key.
func TestUnfingerprintedKey(t *testing.T) {
	t.Parallel()
	s := openStore(t, migratedDatabase(t), clock.Real)
	storetest.CheckUnfingerprinted(t, s, func(t *testing.T, id uuid.UUID) {
		if _, err := s.pool.Exec(t.Context(), "UPDATE jobd_jobs SET idempotency_fingerprint = NULL WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
	})
}
