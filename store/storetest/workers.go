package storetest

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var workerTests = []test{
	{"Lifecycle", testWorkerLifecycle},
	{"Requires", testWorkerRequires},
	{"Prefers", testWorkerPrefers},
	{"OfflineRace", testWorkerOfflineRace},
	{"Queues", testWorkerQueues},
	{"KeyWithWorker", testKeyWithWorker},
}

// testKeyWithWorker: KeyByPrefix of a worker's key returns its worker as
// it is when read (its queues, capabilities, whether it is disabled), in
// the same statement; of another key, none; a deleted worker's key is
// not found.
func testKeyWithWorker(t *testing.T, e *env) {
	ctx := t.Context()
	e.newWorker(t, "kw", "gpu")
	k, err := e.s.KeyByPrefix(ctx, "pkw")
	if err != nil {
		t.Fatal(err)
	}
	if k.WorkerID != "kw" || k.Worker == nil || k.Worker.ID != "kw" || k.Worker.Name != "w-kw" || k.Worker.Disabled ||
		!slices.Equal(k.Worker.Capabilities, []string{"gpu"}) || k.Worker.Status != store.WorkerIdle {
		t.Fatalf("key of worker kw: %+v with worker %+v", k, k.Worker)
	}
	if _, err := e.s.WorkerSetDisabled(ctx, "kw", true); err != nil {
		t.Fatal(err)
	}
	if k, err = e.s.KeyByPrefix(ctx, "pkw"); err != nil || k.Worker == nil || !k.Worker.Disabled {
		t.Fatalf("after the worker was disabled: %+v, %v", k, err)
	}
	h := sha256.Sum256([]byte("plain"))
	if err := e.s.KeyCreate(ctx, store.APIKey{ID: "plain", Name: "plain", Prefix: "pplain", Hash: h[:], Scopes: []string{"read"}}); err != nil {
		t.Fatal(err)
	}
	if k, err = e.s.KeyByPrefix(ctx, "pplain"); err != nil || k.Worker != nil || k.WorkerID != "" {
		t.Fatalf("a key of no worker: %+v, %v", k, err)
	}
	if err := e.s.WorkerDelete(ctx, "kw"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.KeyByPrefix(ctx, "pkw"); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("the key of a deleted worker: %v, want not found", err)
	}
}

// newWorker registers a worker with a key of scope worker.
func (e *env) newWorker(t *testing.T, id string, caps ...string) store.Worker {
	t.Helper()
	h := sha256.Sum256([]byte("secret-" + id))
	w := store.Worker{ID: id, Name: "w-" + id, Capabilities: caps, Metadata: json.RawMessage(`{"zone":"a"}`)}
	key := store.APIKey{ID: "key-" + id, Name: "worker " + id, Prefix: "p" + id, Hash: h[:], Scopes: []string{"worker"}, WorkerID: id}
	if err := e.s.WorkerCreate(t.Context(), w, key); err != nil {
		t.Fatalf("WorkerCreate %s: %v", id, err)
	}
	return w
}

func (e *env) worker(t *testing.T, id string) *store.Worker {
	t.Helper()
	w, err := e.s.WorkerGet(t.Context(), id)
	if err != nil {
		t.Fatalf("WorkerGet %s: %v", id, err)
	}
	return w
}

func (e *env) seen(t *testing.T, id string, status store.WorkerStatus) {
	t.Helper()
	if err := e.s.WorkerSeen(t.Context(), id, status, 0, 0); err != nil {
		t.Fatalf("WorkerSeen %s: %v", id, err)
	}
}

func testWorkerLifecycle(t *testing.T, e *env) {
	ctx := t.Context()
	e.newWorker(t, "w1", "gpu", "cuda")
	e.clk.Advance(time.Second)
	e.newWorker(t, "w2")
	h := sha256.Sum256([]byte("x"))
	err := e.s.WorkerCreate(ctx, store.Worker{ID: "w1", Name: "again"}, store.APIKey{ID: "key-other", Prefix: "pother", Hash: h[:], WorkerID: "w1"})
	wantErr(t, "WorkerCreate of a taken id", err, job.ErrDuplicate)

	w := e.worker(t, "w1")
	if w.Name != "w-w1" || !slices.Equal(w.Capabilities, []string{"gpu", "cuda"}) || w.Status != store.WorkerIdle ||
		w.Disabled || w.LastHeartbeatAt != nil || !jsonEqual(w.Metadata, []byte(`{"zone":"a"}`)) {
		t.Fatalf("WorkerGet w1 = %+v", w)
	}
	key, err := e.s.KeyByPrefix(ctx, "pw1")
	if err != nil || key.WorkerID != "w1" || !slices.Equal(key.Scopes, []string{"worker"}) {
		t.Fatalf("KeyByPrefix of the worker's key = %+v, %v; want worker w1", key, err)
	}
	list, err := e.s.WorkerList(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "w1" || list[1].ID != "w2" {
		t.Fatalf("WorkerList = %+v, %v; want w1, w2", list, err)
	}

	e.insert(t, job.InsertParams{Kind: "k"})
	if _, err := e.s.JobClaim(ctx, store.ClaimParams{Queue: job.DefaultQueue, Max: 1, Owner: "w1", WorkerID: "w1"}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Second)
	if err := e.s.WorkerSeen(ctx, "w1", store.WorkerBusy, 2, 1); err != nil {
		t.Fatal(err)
	}
	w = e.worker(t, "w1")
	if w.Status != store.WorkerBusy || w.JobsDone != 2 || w.JobsFailed != 1 || w.RunningJobs != 1 {
		t.Fatalf("after WorkerSeen: %+v, want busy, 2 done, 1 failed, 1 running", w)
	}
	wantTimePtr(t, "last_heartbeat_at", w.LastHeartbeatAt, e.now())
	wantErr(t, "WorkerSeen of an unknown worker", e.s.WorkerSeen(ctx, "nope", "", 0, 0), job.ErrNotFound)

	w, err = e.s.WorkerSetDisabled(ctx, "w1", true)
	if err != nil || !w.Disabled || w.Status != store.WorkerBusy {
		t.Fatalf("WorkerSetDisabled = %+v, %v; want disabled, status kept", w, err)
	}
	if w, err = e.s.WorkerSetDisabled(ctx, "w1", false); err != nil || w.Disabled {
		t.Fatalf("enable = %+v, %v", w, err)
	}
	_, err = e.s.WorkerSetDisabled(ctx, "nope", true)
	wantErr(t, "WorkerSetDisabled of an unknown worker", err, job.ErrNotFound)

	if err := e.s.WorkerDelete(ctx, "w1"); err != nil {
		t.Fatalf("WorkerDelete: %v", err)
	}
	_, err = e.s.KeyByPrefix(ctx, "pw1")
	wantErr(t, "KeyByPrefix of a deleted worker's key", err, job.ErrNotFound)
	_, err = e.s.WorkerGet(ctx, "w1")
	wantErr(t, "WorkerGet of a deleted worker", err, job.ErrNotFound)
	wantErr(t, "WorkerDelete again", e.s.WorkerDelete(ctx, "w1"), job.ErrNotFound)
	if _, err := e.s.KeyByPrefix(ctx, "pw2"); err != nil {
		t.Fatalf("another worker's key went with it: %v", err)
	}
}

func testWorkerRequires(t *testing.T, e *env) {
	gpu := e.insert(t, job.InsertParams{Kind: "k", Requires: []string{"gpu", "cuda", "gpu"}, Prefers: []string{}})
	if !slices.Equal(gpu.Requires, []string{"cuda", "gpu"}) || gpu.Prefers != nil {
		t.Fatalf("inserted requires %q prefers %q, want [cuda gpu] and none", gpu.Requires, gpu.Prefers)
	}
	if got := e.get(t, gpu.ID); !slices.Equal(got.Requires, gpu.Requires) {
		t.Fatalf("JobGet requires = %q", got.Requires)
	}
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{{Kind: "k", Requires: []string{"no spaces"}}})
	var ve *job.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("insert with a bad capability: err = %v, want a ValidationError", err)
	}
	plain := e.insert(t, job.InsertParams{Kind: "k", Priority: prio(200)})
	claim := func(caps ...string) []*job.Job {
		jobs, err := e.s.JobClaim(t.Context(), store.ClaimParams{Queue: job.DefaultQueue, Max: 10, Owner: owner, Capabilities: caps})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	wantIDs(t, "claim without capabilities", claim(), plain)
	wantIDs(t, "claim with half of them", claim("gpu"))
	wantIDs(t, "claim with all of them", claim("cuda", "gpu", "x"), gpu)
}

func testWorkerPrefers(t *testing.T, e *env) {
	const window = time.Minute
	claim := func(worker string, caps ...string) []*job.Job {
		jobs, err := e.s.JobClaim(t.Context(), store.ClaimParams{
			Queue: job.DefaultQueue, Max: 10, Owner: owner, Capabilities: caps, WorkerID: worker, PreferWindow: window})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	// Nobody has a GPU: a CPU claimer takes the job at once.
	j1 := e.insert(t, job.InsertParams{Kind: "k", Prefers: []string{"gpu"}})
	wantIDs(t, "claim with no GPU worker registered", claim("cpu"), j1)

	// An idle GPU worker exists: the CPU claimer waits out the window...
	e.newWorker(t, "gpu1", "gpu")
	e.newWorker(t, "cpu1")
	j2 := e.insert(t, job.InsertParams{Kind: "k", Prefers: []string{"gpu"}})
	wantIDs(t, "CPU claim inside the window", claim("cpu1"))
	// ...but the GPU worker's own claim is not held back by itself.
	e.clk.Advance(window - time.Second)
	wantIDs(t, "CPU claim just inside the window", claim("cpu1"))
	e.clk.Advance(time.Second)
	wantIDs(t, "CPU claim at the window's end", claim("cpu1"), j2)

	j3 := e.insert(t, job.InsertParams{Kind: "k", Prefers: []string{"gpu"}})
	wantIDs(t, "a GPU worker's claim", claim("gpu1", "gpu"), j3)

	// A busy, disabled or offline GPU worker does not hold the job back.
	j4 := e.insert(t, job.InsertParams{Kind: "k", Prefers: []string{"gpu"}})
	e.seen(t, "gpu1", store.WorkerBusy)
	wantIDs(t, "CPU claim while the GPU worker is busy", claim("cpu1"), j4)
	e.seen(t, "gpu1", store.WorkerIdle)
	if _, err := e.s.WorkerSetDisabled(t.Context(), "gpu1", true); err != nil {
		t.Fatal(err)
	}
	j5 := e.insert(t, job.InsertParams{Kind: "k", Prefers: []string{"gpu"}})
	wantIDs(t, "CPU claim while the GPU worker is disabled", claim("cpu1"), j5)
	if _, err := e.s.WorkerSetDisabled(t.Context(), "gpu1", false); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Hour)
	if n, err := e.s.WorkerMarkOffline(t.Context(), e.now().Add(-time.Minute)); err != nil || n != 2 {
		t.Fatalf("WorkerMarkOffline = %d, %v; want both workers", n, err)
	}
	j6 := e.insert(t, job.InsertParams{Kind: "k", Prefers: []string{"gpu"}})
	wantIDs(t, "CPU claim while the GPU worker is offline", claim("cpu1"), j6)
	// Its next sign of life brings it back.
	e.seen(t, "gpu1", "")
	if w := e.worker(t, "gpu1"); w.Status != store.WorkerActive {
		t.Fatalf("status after a heartbeat of an offline worker = %q, want active", w.Status)
	}
	e.insert(t, job.InsertParams{Kind: "k", Prefers: []string{"gpu"}})
	wantIDs(t, "CPU claim with the GPU worker back", claim("cpu1"))
}

// testWorkerOfflineRace runs the leader's offline sweep against a
// heartbeat many times: whichever commits first, a worker whose heartbeat
// is newer than the cutoff never ends offline.
func testWorkerOfflineRace(t *testing.T, e *env) {
	e.newWorker(t, "w")
	e.seen(t, "w", store.WorkerIdle)
	for i := range 20 {
		cutoff := e.now() // the last heartbeat is at the cutoff: due
		e.clk.Advance(time.Second)
		var wg sync.WaitGroup
		var markErr, seenErr error
		wg.Go(func() { _, markErr = e.s.WorkerMarkOffline(t.Context(), cutoff) })
		wg.Go(func() { seenErr = e.s.WorkerSeen(t.Context(), "w", store.WorkerIdle, 0, 0) })
		wg.Wait()
		if markErr != nil || seenErr != nil {
			t.Fatalf("round %d: mark %v, seen %v", i, markErr, seenErr)
		}
		if w := e.worker(t, "w"); w.Status != store.WorkerIdle {
			t.Fatalf("round %d: status %q after a heartbeat newer than the cutoff, want idle", i, w.Status)
		}
	}
	// Without the heartbeat the sweep does mark it.
	e.clk.Advance(time.Second)
	if n, err := e.s.WorkerMarkOffline(t.Context(), e.now()); err != nil || n != 1 {
		t.Fatalf("WorkerMarkOffline = %d, %v; want 1", n, err)
	}
}
