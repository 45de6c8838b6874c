package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var insertTests = []test{
	{"Defaults", testInsertDefaults},
	{"ExplicitFields", testInsertExplicit},
	{"Batch", testInsertBatch},
	{"Validation", testInsertValidation},
	{"BadBatchWritesNothing", testInsertBadBatch},
	{"UnknownQueue", testInsertUnknownQueue},
	{"GetUnknown", testGetUnknown},
	{"MigrateAgain", testMigrateAgain},
}

func testInsertDefaults(t *testing.T, e *env) {
	now := e.now()
	ins := e.insert(t, job.InsertParams{Kind: "email"})
	for _, j := range []*job.Job{ins, e.get(t, ins.ID)} {
		if j.ID == uuid.Nil || j.ID.Version() != 7 {
			t.Fatalf("id = %s (version %d), want a UUIDv7", j.ID, j.ID.Version())
		}
		if j.Queue != job.DefaultQueue || j.Kind != "email" || j.Priority != job.DefaultPriority ||
			j.MaxAttempts != job.DefaultMaxAttempts || j.LeaseTTL != job.DefaultLeaseTTL || j.Attempt != 0 {
			t.Fatalf("defaults: queue %q kind %q priority %d max_attempts %d lease_ttl %s attempt %d; want %q %q %d %d %s 0",
				j.Queue, j.Kind, j.Priority, j.MaxAttempts, j.LeaseTTL, j.Attempt,
				job.DefaultQueue, "email", job.DefaultPriority, job.DefaultMaxAttempts, job.DefaultLeaseTTL)
		}
		wantState(t, j, job.StateQueued)
		wantJSON(t, "args", j.Args, []byte(`{}`))
		wantTime(t, "run_at", j.RunAt, now)
		wantTime(t, "created_at", j.CreatedAt, now)
		wantStamp(t, "updated_at", j.UpdatedAt, now)
		wantNil(t, "started_at", j.StartedAt)
		wantNil(t, "finished_at", j.FinishedAt)
		wantNil(t, "lease_expires_at", j.LeaseExpiresAt)
		if j.LeaseToken != uuid.Nil || j.CancelRequested || j.ArgsHash != "" {
			t.Fatalf("new job: lease token %s, cancel requested %v, args hash %q; want none", j.LeaseToken, j.CancelRequested, j.ArgsHash)
		}
	}
	e.wantKinds(t, ins.ID, job.EventQueued)
}

func testInsertExplicit(t *testing.T, e *env) {
	runAt := e.now().Add(-time.Minute)
	p := job.InsertParams{
		Queue: "reports", Kind: "render", Args: json.RawMessage(`{"id": 7, "opts": {"pages": [1, 2]}}`),
		Priority: prio(0), RunAt: runAt, MaxAttempts: 2, LeaseTTL: 90 * time.Second,
		LockKey: "customer-7", PartitionKey: "eu", IdempotencyKey: "render-7",
	}
	ins := e.insert(t, p)
	for _, j := range []*job.Job{ins, e.get(t, ins.ID)} {
		if j.Queue != p.Queue || j.Kind != p.Kind || j.Priority != 0 || j.MaxAttempts != 2 || j.LeaseTTL != p.LeaseTTL ||
			j.LockKey != p.LockKey || j.PartitionKey != p.PartitionKey || j.IdempotencyKey != p.IdempotencyKey {
			t.Fatalf("job %+v does not carry params %+v", j, p)
		}
		wantJSON(t, "args", j.Args, p.Args)
		wantTime(t, "run_at", j.RunAt, runAt)
		wantState(t, j, job.StateQueued)
	}
}

func testInsertBatch(t *testing.T, e *env) {
	res := e.insertMany(t,
		job.InsertParams{Kind: "k0"}, job.InsertParams{Kind: "k1", Queue: "other"}, job.InsertParams{Kind: "k2"})
	seen := map[uuid.UUID]bool{}
	for i, r := range res {
		if !r.Created || r.Job == nil {
			t.Fatalf("result %d: Created %v job %v, want a new job", i, r.Created, r.Job)
		}
		if want := "k" + string(rune('0'+i)); r.Job.Kind != want {
			t.Fatalf("result %d is kind %q, want %q: results must follow the params' order", i, r.Job.Kind, want)
		}
		if seen[r.Job.ID] {
			t.Fatalf("result %d repeats id %s", i, r.Job.ID)
		}
		seen[r.Job.ID] = true
		e.get(t, r.Job.ID)
	}
	if n := e.total(t); n != 3 {
		t.Fatalf("total = %d, want 3", n)
	}
}

func testInsertValidation(t *testing.T, e *env) {
	big := `{"pad":"` + strings.Repeat("x", job.DefaultMaxArgsBytes) + `"}`
	cases := []struct {
		name  string
		field string
		p     job.InsertParams
	}{
		{"missing kind", "kind", job.InsertParams{Queue: "q"}},
		{"negative priority", "priority", job.InsertParams{Kind: "k", Priority: prio(-1)}},
		{"max_attempts below 1", "max_attempts", job.InsertParams{Kind: "k", MaxAttempts: -1}},
		{"args an array", "args", job.InsertParams{Kind: "k", Args: json.RawMessage(`[1, 2]`)}},
		{"args a string", "args", job.InsertParams{Kind: "k", Args: json.RawMessage(`"x"`)}},
		{"args null", "args", job.InsertParams{Kind: "k", Args: json.RawMessage(`null`)}},
		{"args not JSON", "args", job.InsertParams{Kind: "k", Args: json.RawMessage(`{"a":`)}},
		{"args over the size limit", "args", job.InsertParams{Kind: "k", Args: json.RawMessage(big)}},
		{"bad unique mode", "unique", job.InsertParams{Kind: "k", Unique: "always"}},
		{"lease_ttl too short", "lease_ttl", job.InsertParams{Kind: "k", LeaseTTL: 10 * time.Millisecond}},
	}
	for _, c := range cases {
		res, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{c.p})
		var ve *job.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("%s: err = %v (results %v), want a *job.ValidationError", c.name, err, res)
		}
		if ve.Field != c.field {
			t.Fatalf("%s: error names field %q, want %q", c.name, ve.Field, c.field)
		}
	}
	if n := e.total(t); n != 0 {
		t.Fatalf("after rejected inserts: %d jobs stored, want 0", n)
	}
}

func testInsertBadBatch(t *testing.T, e *env) {
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{
		{Kind: "good", IdempotencyKey: "first"}, {Kind: "bad", Priority: prio(-5)}, {Kind: "good"},
	})
	var ve *job.ValidationError
	if !errors.As(err, &ve) || ve.Field != "priority" {
		t.Fatalf("batch with a bad params: err = %v, want a *job.ValidationError for priority", err)
	}
	if n := e.total(t); n != 0 {
		t.Fatalf("after a rejected batch: %d jobs stored, want 0", n)
	}
	// The good params' idempotency key was not taken by a half-written batch.
	if res := e.insertMany(t, job.InsertParams{Kind: "good", IdempotencyKey: "first"}); !res[0].Created {
		t.Fatalf("idempotency key of a rejected batch matched a job")
	}
}

func testInsertUnknownQueue(t *testing.T, e *env) {
	j := e.insert(t, job.InsertParams{Queue: "never-configured", Kind: "k"})
	if j.Queue != "never-configured" {
		t.Fatalf("queue = %q", j.Queue)
	}
	queues, err := e.s.QueueList(t.Context())
	if err != nil {
		t.Fatalf("QueueList: %v", err)
	}
	if findQueue(queues, "never-configured") == nil {
		t.Fatalf("QueueList %+v lacks the queue of a stored job", queues)
	}
	if c := e.claimOne(t, "never-configured"); c.ID != j.ID {
		t.Fatalf("claimed %s, want %s", c.ID, j.ID)
	}
}

func testGetUnknown(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	e.gone(t, uuid.Must(uuid.NewV7()))
}

func testMigrateAgain(t *testing.T, e *env) {
	j := e.insert(t, job.InsertParams{Kind: "k"})
	if err := e.s.Migrate(t.Context()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if err := e.s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	e.get(t, j.ID)
}

func findQueue(queues []store.QueueInfo, name string) *store.QueueInfo {
	for i := range queues {
		if queues[i].Name == name {
			return &queues[i]
		}
	}
	return nil
}
