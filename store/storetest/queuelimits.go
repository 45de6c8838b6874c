package storetest

import (
	"crypto/sha256"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The queue limits of workers and API keys (job.QueuePatterns), and the
// listing of a caller limited to queues (ListParams.QueuesIn).

// testKeyQueues: a key's queues are stored and read back as given, by
// prefix and in the list; a key without them reads back with none; a
// key whose queues job.ParseQueuePatterns refuses is refused, naming
// queues, and nothing is stored.
func testKeyQueues(t *testing.T, e *env) {
	h1, h2 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two"))
	limited := store.APIKey{ID: "key-1", Name: "video", Prefix: "pq1", Hash: h1[:], Scopes: []string{"submit", "read", "cancel"},
		Queues: job.QueuePatterns{"video.*", "audio"}, CreatedAt: e.now()}
	open := store.APIKey{ID: "key-2", Name: "all", Prefix: "pq2", Hash: h2[:], Scopes: []string{"read"}, CreatedAt: e.now().Add(time.Second)}
	for _, k := range []store.APIKey{limited, open} {
		if err := e.s.KeyCreate(t.Context(), k); err != nil {
			t.Fatalf("KeyCreate %s: %v", k.ID, err)
		}
	}
	got, err := e.s.KeyByPrefix(t.Context(), "pq1")
	if err != nil || !sameKey(*got, limited) || !slices.Equal(got.Queues, limited.Queues) {
		t.Fatalf("KeyByPrefix of the limited key = %+v, %v; want queues %v", got, err, limited.Queues)
	}
	got, err = e.s.KeyByPrefix(t.Context(), "pq2")
	if err != nil || got.Queues != nil {
		t.Fatalf("KeyByPrefix of the key without queues = %+v, %v; want nil queues", got, err)
	}
	keys, err := e.s.KeyList(t.Context())
	if err != nil || len(keys) != 2 || !slices.Equal(keys[0].Queues, limited.Queues) || keys[1].Queues != nil {
		t.Fatalf("KeyList = %+v, %v", keys, err)
	}
	h3 := sha256.Sum256([]byte("three"))
	for _, bad := range [][]string{{""}, {"jobd.*"}, {"gateway"}, {"a*b"}} {
		k := store.APIKey{ID: "key-bad", Name: "bad", Prefix: "pbad", Hash: h3[:], Scopes: []string{"read"}, Queues: bad}
		var ve *job.ValidationError
		if err := e.s.KeyCreate(t.Context(), k); !errors.As(err, &ve) || ve.Field != "queues" {
			t.Fatalf("KeyCreate with queues %q: %v, want a validation error naming queues", bad, err)
		}
	}
	if keys, err := e.s.KeyList(t.Context()); err != nil || len(keys) != 2 {
		t.Fatalf("KeyList after the refusals = %+v, %v; want the 2 keys", keys, err)
	}
}

// testWorkerQueues: a worker's queues are stored and read back by
// WorkerGet and WorkerList; a worker without them has none; bad ones are
// refused, naming queues, with nothing stored (neither worker nor key).
func testWorkerQueues(t *testing.T, e *env) {
	ctx := t.Context()
	h := sha256.Sum256([]byte("secret-wq"))
	w := store.Worker{ID: "wq", Name: "video box", Queues: job.QueuePatterns{"video.*", "thumbs"}}
	key := store.APIKey{ID: "key-wq", Name: "worker wq", Prefix: "pwq", Hash: h[:], Scopes: []string{"worker"}}
	if err := e.s.WorkerCreate(ctx, w, key); err != nil {
		t.Fatalf("WorkerCreate: %v", err)
	}
	e.clk.Advance(time.Second)
	e.newWorker(t, "w-any")
	if got := e.worker(t, "wq"); !slices.Equal(got.Queues, w.Queues) {
		t.Fatalf("WorkerGet queues = %v, want %v", got.Queues, w.Queues)
	}
	if got := e.worker(t, "w-any"); got.Queues != nil {
		t.Fatalf("WorkerGet of a worker without queues: queues %v, want nil", got.Queues)
	}
	list, err := e.s.WorkerList(ctx)
	if err != nil || len(list) != 2 || !slices.Equal(list[0].Queues, w.Queues) || list[1].Queues != nil {
		t.Fatalf("WorkerList = %+v, %v", list, err)
	}
	h2 := sha256.Sum256([]byte("secret-bad"))
	bad := store.Worker{ID: "w-bad", Name: "bad", Queues: job.QueuePatterns{"processes"}}
	err = e.s.WorkerCreate(ctx, bad, store.APIKey{ID: "key-bad", Name: "worker bad", Prefix: "pbad", Hash: h2[:], Scopes: []string{"worker"}})
	var ve *job.ValidationError
	if !errors.As(err, &ve) || ve.Field != "queues" {
		t.Fatalf("WorkerCreate with a reserved queue: %v, want a validation error naming queues", err)
	}
	_, err = e.s.WorkerGet(ctx, "w-bad")
	wantErr(t, "WorkerGet of the refused worker", err, job.ErrNotFound)
	_, err = e.s.KeyByPrefix(ctx, "pbad")
	wantErr(t, "KeyByPrefix of the refused worker's key", err, job.ErrNotFound)
}

// testListQueuesIn: QueuesIn keeps the jobs of its names and of the
// queues its prefixes match (not the prefix's own name), in every
// listing order, in the total, and together with the other filters.
func testListQueuesIn(t *testing.T, e *env) {
	hd := e.insert(t, job.InsertParams{Queue: "video.hd", Kind: "a"})
	video := e.insert(t, job.InsertParams{Queue: "video", Kind: "a"})
	audio := e.insert(t, job.InsertParams{Queue: "audio", Kind: "b"})
	k4 := e.insert(t, job.InsertParams{Queue: "video.hd.4k", Kind: "b"})
	videos := e.insert(t, job.InsertParams{Queue: "videos", Kind: "a"})
	pct := e.insert(t, job.InsertParams{Queue: "v%_.x", Kind: "a"}) // LIKE's metacharacters mean nothing
	vx := e.insert(t, job.InsertParams{Queue: "vx.x", Kind: "a"})
	since := e.now()

	limited := job.QueuePatterns{"video.*", "audio", "v%_.*"}
	cases := []struct {
		what string
		p    store.ListParams
		want []*job.Job
	}{
		{"no limit", store.ListParams{}, []*job.Job{vx, pct, videos, k4, audio, video, hd}},
		{"video.*, audio, v%_.*", store.ListParams{QueuesIn: limited}, []*job.Job{pct, k4, audio, hd}},
		{"oldest first", store.ListParams{QueuesIn: limited, OldestFirst: true}, []*job.Job{hd, audio, k4, pct}},
		{"with kind a", store.ListParams{QueuesIn: limited, Kind: "a"}, []*job.Job{pct, hd}},
		{"with a queue of them", store.ListParams{QueuesIn: limited, Queue: "audio"}, []*job.Job{audio}},
		{"with a queue outside them", store.ListParams{QueuesIn: limited, Queue: "video"}, nil},
		{"names only", store.ListParams{QueuesIn: job.QueuePatterns{"video", "videos"}}, []*job.Job{videos, video}},
		{"prefixes only", store.ListParams{QueuesIn: job.QueuePatterns{"video.hd.*"}}, []*job.Job{k4}},
		{"a queue with no job", store.ListParams{QueuesIn: job.QueuePatterns{"nothing"}}, nil},
		{"the feed", store.ListParams{QueuesIn: limited, UpdatedSince: &since}, []*job.Job{hd, audio, k4, pct}},
	}
	for _, c := range cases {
		e.wantList(t, c.what, c.p, c.want...)
		if got := pages(t, e, c.what, c.p, 2, int64(len(c.want))); !slices.Equal(idsOf(got), idsOf(c.want)) {
			t.Fatalf("%s in pages of 2 = %s, want %s", c.what, idList(got), idList(c.want))
		}
	}
	// A bounded scan is filtered by QueuesIn too.
	res := e.list(t, store.ListParams{QueuesIn: job.QueuePatterns{"audio"}, Limit: 1, ScanLimit: 2})
	if len(res.Jobs) != 0 || res.ScannedTo == nil {
		t.Fatalf("a bounded scan of the 2 newest for audio = %s (scanned to %v), want none, bounded", idList(res.Jobs), res.ScannedTo)
	}
}
