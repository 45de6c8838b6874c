package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var txTests = []test{
	{"Commit", testTxCommit},
	{"RollbackOnError", testTxRollbackOnError},
	{"RollbackOnPanic", testTxRollbackOnPanic},
	{"WakeAfterCommit", testTxWakeAfterCommit},
	{"DelayedWakeAfterCommit", testTxDelayedWakeAfterCommit},
	{"StoreCalledInside", testTxStoreCalledInside},
}

// txWrites are writes of each kind an Executor has, made in one
// transaction: a job inserted, a queued job canceled, a running job's
// failure, a key, a worker and its key.
type txWrites struct {
	queued, running *job.Job // made before the transaction
	inserted        *job.Job
}

// prepareTxWrites makes the jobs the writes change.
func (e *env) prepareTxWrites(t *testing.T) *txWrites {
	t.Helper()
	w := &txWrites{queued: e.insert(t, job.InsertParams{Queue: "cancel-me", Kind: "k"})}
	e.insert(t, job.InsertParams{Queue: "fail-me", Kind: "k", MaxAttempts: 3})
	w.running = e.claimOne(t, "fail-me")
	return w
}

func txKey(id string) store.APIKey {
	h := sha256.Sum256([]byte(id))
	return store.APIKey{ID: id, Name: id, Prefix: "p" + id, Hash: h[:], Scopes: []string{"read"}}
}

// write makes the writes in ex, checking that ex reads its own.
func (w *txWrites) write(ctx context.Context, t *testing.T, ex store.Executor) error {
	t.Helper()
	res, err := ex.JobInsertMany(ctx, []job.InsertParams{{Queue: "tx", Kind: "k"}})
	if err != nil {
		return err
	}
	w.inserted = res[0].Job
	if got, err := ex.JobGet(ctx, w.inserted.ID); err != nil || got.State != job.StateQueued {
		t.Errorf("JobGet of a job inserted in the same transaction: %+v, %v", got, err)
	}
	if _, err := ex.JobCancel(ctx, w.queued.ID); err != nil {
		return err
	}
	fin, err := ex.JobFinish(ctx, []store.Outcome{{Lease: leaseOf(w.running), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "boom", Retryable: true, RetryDelay: time.Minute}}})
	if err != nil {
		return err
	}
	if fin[0].State != job.StateQueued {
		t.Errorf("JobFinish in a transaction: %+v, want queued", fin[0])
	}
	if err := ex.KeyCreate(ctx, txKey("tx-key")); err != nil {
		return err
	}
	key := txKey("tx-worker-key")
	key.WorkerID = "tx-worker"
	return ex.WorkerCreate(ctx, store.Worker{ID: "tx-worker", Name: "w"}, key)
}

// wantNone requires that none of the writes happened: the inserted job
// is not there nor journaled, the others are as they were.
func (w *txWrites) wantNone(t *testing.T, e *env) {
	t.Helper()
	if w.inserted != nil {
		e.gone(t, w.inserted.ID)
		if ev := e.events(t, w.inserted.ID); len(ev) != 0 {
			t.Fatalf("journal of a job inserted in a rolled back transaction: %+v", ev)
		}
	}
	wantState(t, e.get(t, w.queued.ID), job.StateQueued)
	e.wantKinds(t, w.queued.ID, job.EventQueued)
	wantState(t, e.get(t, w.running.ID), job.StateRunning)
	e.wantKinds(t, w.running.ID, job.EventQueued, job.EventClaimed)
	_, err := e.s.KeyByPrefix(t.Context(), txKey("tx-key").Prefix)
	wantErr(t, "KeyByPrefix of a key created in a rolled back transaction", err, job.ErrNotFound)
	_, err = e.s.WorkerGet(t.Context(), "tx-worker")
	wantErr(t, "WorkerGet of a worker created in a rolled back transaction", err, job.ErrNotFound)
}

// testTxCommit: the operations of a committed transaction are all there,
// and none was visible outside it before the commit.
func testTxCommit(t *testing.T, e *env) {
	w := e.prepareTxWrites(t)
	err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
		if err := w.write(ctx, t, ex); err != nil {
			return err
		}
		// Outside the transaction (another context), nothing shows yet.
		if _, err := e.s.JobGet(t.Context(), w.inserted.ID); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("JobGet outside the transaction before its commit: %v, want job.ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	wantState(t, e.get(t, w.inserted.ID), job.StateQueued)
	e.wantKinds(t, w.inserted.ID, job.EventQueued)
	wantState(t, e.get(t, w.queued.ID), job.StateCanceled)
	e.wantKinds(t, w.queued.ID, job.EventQueued, job.EventCanceled)
	wantState(t, e.get(t, w.running.ID), job.StateQueued)
	e.wantKinds(t, w.running.ID, job.EventQueued, job.EventClaimed, job.EventRetried)
	if _, err := e.s.KeyByPrefix(t.Context(), txKey("tx-key").Prefix); err != nil {
		t.Fatalf("KeyByPrefix after the commit: %v", err)
	}
	if _, err := e.s.WorkerGet(t.Context(), "tx-worker"); err != nil {
		t.Fatalf("WorkerGet after the commit: %v", err)
	}
	e.claimOne(t, "tx")
}

var errTxTest = errors.New("storetest: the transaction's function failed")

// testTxRollbackOnError: a function that fails rolls everything back,
// its journal and wake-ups with it, and InTx returns its error.
func testTxRollbackOnError(t *testing.T, e *env) {
	w := e.prepareTxWrites(t)
	l := e.listen(t)
	err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
		if err := w.write(ctx, t, ex); err != nil {
			return err
		}
		if err := ex.Wake(ctx, "tx-wake"); err != nil {
			return err
		}
		return errTxTest
	})
	wantErr(t, "InTx with a failing function", err, errTxTest)
	w.wantNone(t, e)
	wantNoWake(t, l, "tx", "tx-wake", "fail-me")
	e.claimNone(t, "tx")
}

// testTxRollbackOnPanic: a function that panics rolls everything back,
// and InTx panics again with its value.
func testTxRollbackOnPanic(t *testing.T, e *env) {
	w := e.prepareTxWrites(t)
	l := e.listen(t)
	func() {
		defer func() {
			if r := recover(); r != errTxTest {
				t.Fatalf("InTx's panic: %v, want the function's", r)
			}
		}()
		_ = e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
			if err := w.write(ctx, t, ex); err != nil {
				return err
			}
			panic(errTxTest)
		})
	}()
	w.wantNone(t, e)
	wantNoWake(t, l, "tx", "fail-me")
	// The store is usable: nothing was left holding its connection.
	e.insert(t, job.InsertParams{Queue: "after", Kind: "k"})
	e.claimOne(t, "after")
}

// wantNoWake requires that no wake-up of queues, nor any cancel
// notification, was sent so far.
func wantNoWake(t *testing.T, l *listener, queues ...string) {
	t.Helper()
	for _, n := range l.drain(t) {
		if n.CancelJob != uuid.Nil || slices.Contains(queues, n.Queue) {
			t.Fatalf("rolled back transaction sent %+v", n)
		}
	}
}

// testTxWakeAfterCommit: what a transaction's operations notify (a job
// available now, a Wake, a running job's cancel request) arrives once it
// commits, not before.
func testTxWakeAfterCommit(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Queue: "long", Kind: "k"})
	running := e.claimOne(t, "long")
	l := e.listen(t)
	err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
		if _, err := ex.JobInsertMany(ctx, []job.InsertParams{{Queue: "tx", Kind: "k"}}); err != nil {
			return err
		}
		if err := ex.Wake(ctx, "tx-wake"); err != nil {
			return err
		}
		if _, err := ex.JobCancel(ctx, running.ID); err != nil {
			return err
		}
		// Notifications arrive in the order they are sent: one sent now,
		// from outside, comes after anything the transaction sent so far.
		for _, n := range l.drain(t) {
			if n.Queue == "tx" || n.Queue == "tx-wake" || n.CancelJob == running.ID {
				t.Errorf("notification %+v before the transaction committed", n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	l.waitFor(t, "tx")
	l.waitFor(t, "tx-wake")
	l.waitCancel(t, running.ID)
}

// testTxDelayedWakeAfterCommit: a job a transaction inserts due later
// wakes its queue when it falls due, as one inserted alone does.
func testTxDelayedWakeAfterCommit(t *testing.T, e *env) {
	l := e.listen(t)
	err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
		_, err := ex.JobInsertMany(ctx, []job.InsertParams{{Queue: "later", Kind: "k", RunAt: e.now().Add(time.Minute)}})
		return err
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	l.drain(t)
	e.clk.Advance(time.Minute + time.Second)
	l.waitFor(t, "later")
	e.claimOne(t, "later")
}

// testTxStoreCalledInside: the Store called with the transaction's context
// fails at once with store.ErrCalledInTx, reads and writes alike, instead
// of waiting for the transaction; the transaction goes on.
func testTxStoreCalledInside(t *testing.T, e *env) {
	j := e.insert(t, job.InsertParams{Kind: "k"})
	err := e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
		inner, cancel := context.WithTimeout(ctx, time.Hour) // derived from fn's
		defer cancel()
		_, err := e.s.JobInsertMany(inner, []job.InsertParams{{Kind: "k"}})
		wantErr(t, "JobInsertMany on the Store inside InTx", err, store.ErrCalledInTx)
		_, err = e.s.JobGet(ctx, j.ID)
		wantErr(t, "JobGet on the Store inside InTx", err, store.ErrCalledInTx)
		_, err = e.s.JobCancel(ctx, j.ID)
		wantErr(t, "JobCancel on the Store inside InTx", err, store.ErrCalledInTx)
		wantErr(t, "Wake on the Store inside InTx", e.s.Wake(ctx, "q"), store.ErrCalledInTx)
		_, err = e.s.LeaderAttempt(ctx, "duty", "node", time.Minute)
		wantErr(t, "LeaderAttempt on the Store inside InTx", err, store.ErrCalledInTx)
		err = e.s.InTx(ctx, func(context.Context, store.Executor) error { return nil })
		wantErr(t, "InTx inside InTx", err, store.ErrCalledInTx)
		_, err = ex.JobCancel(ctx, j.ID)
		return err
	})
	if err != nil {
		t.Fatalf("InTx: %v", err)
	}
	wantState(t, e.get(t, j.ID), job.StateCanceled)
}
