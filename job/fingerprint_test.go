package job_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
)

// fingerprintOf normalises p and returns the fingerprint Normalize set.
func fingerprintOf(t *testing.T, p job.InsertParams) string {
	t.Helper()
	p.IdempotencyKey = "k"
	if _, err := p.Normalize(0); err != nil {
		t.Fatalf("Normalize %+v: %v", p, err)
	}
	if p.IdempotencyFingerprint == "" {
		t.Fatalf("Normalize left %+v without a fingerprint", p)
	}
	return p.IdempotencyFingerprint
}

// TestFingerprint: requests that spell one job differently share a
// fingerprint; requests that differ in a member that decides the job,
// or in whether run_at is given, do not; what does not decide the job
// (the traceparent, the schedule's tick) is not part of it.
func TestFingerprint(t *testing.T) {
	at := time.Date(2031, 1, 2, 3, 4, 5, 123456000, time.UTC)
	prio, defPrio := 7, job.DefaultPriority
	base := job.InsertParams{Kind: "charge", Args: json.RawMessage(`{"a":1,"b":[1,2]}`), Requires: []string{"gpu", "cpu"}, RunAt: at, Priority: &prio}
	want := fingerprintOf(t, base)
	for what, p := range map[string]job.InsertParams{
		"defaults given": {Queue: job.DefaultQueue, Kind: "charge", Args: json.RawMessage(`{"a":1,"b":[1,2]}`), Requires: []string{"gpu", "cpu"},
			RunAt: at, Priority: &prio, MaxAttempts: job.DefaultMaxAttempts, LeaseTTL: job.DefaultLeaseTTL},
		"args reordered":      {Kind: "charge", Args: json.RawMessage(` {"b":[1,2], "a":1} `), Requires: []string{"gpu", "cpu"}, RunAt: at, Priority: &prio},
		"requires reordered":  {Kind: "charge", Args: json.RawMessage(`{"a":1,"b":[1,2]}`), Requires: []string{"cpu", "gpu", "cpu"}, RunAt: at, Priority: &prio},
		"run_at in a zone":    {Kind: "charge", Args: json.RawMessage(`{"a":1,"b":[1,2]}`), Requires: []string{"gpu", "cpu"}, RunAt: at.In(time.FixedZone("x", 3600)).Add(999), Priority: &prio},
		"another traceparent": {Kind: "charge", Args: json.RawMessage(`{"a":1,"b":[1,2]}`), Requires: []string{"gpu", "cpu"}, RunAt: at, Priority: &prio, TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		"a schedule's tick":   {Kind: "charge", Args: json.RawMessage(`{"a":1,"b":[1,2]}`), Requires: []string{"gpu", "cpu"}, RunAt: at, Priority: &prio, Schedule: "s", ScheduledFor: at},
	} {
		if got := fingerprintOf(t, p); got != want {
			t.Errorf("%s: another fingerprint", what)
		}
	}
	if fingerprintOf(t, job.InsertParams{Kind: "k"}) != fingerprintOf(t, job.InsertParams{Kind: "k", Priority: &defPrio}) {
		t.Error("priority omitted and priority 100: other fingerprints")
	}
	for what, change := range map[string]func(p *job.InsertParams){
		"args":        func(p *job.InsertParams) { p.Args = json.RawMessage(`{"a":2,"b":[1,2]}`) },
		"args order":  func(p *job.InsertParams) { p.Args = json.RawMessage(`{"a":1,"b":[2,1]}`) },
		"queue":       func(p *job.InsertParams) { p.Queue = "other" },
		"kind":        func(p *job.InsertParams) { p.Kind = "refund" },
		"priority":    func(p *job.InsertParams) { p.Priority = nil },
		"no run_at":   func(p *job.InsertParams) { p.RunAt = time.Time{} },
		"run_at":      func(p *job.InsertParams) { p.RunAt = at.Add(time.Microsecond) },
		"prefers":     func(p *job.InsertParams) { p.Prefers = []string{"gpu"} },
		"timeout":     func(p *job.InsertParams) { p.Timeout = time.Minute },
		"unique":      func(p *job.InsertParams) { p.Unique = job.UniqueActive },
		"lock key":    func(p *job.InsertParams) { p.LockKey = "l" },
		"callback":    func(p *job.InsertParams) { p.CallbackURL = "https://example.com/cb" },
		"partition":   func(p *job.InsertParams) { p.PartitionKey = "p" },
		"lease ttl":   func(p *job.InsertParams) { p.LeaseTTL = time.Hour },
		"max attempt": func(p *job.InsertParams) { p.MaxAttempts = 2 },
	} {
		p := base
		change(&p)
		if fingerprintOf(t, p) == want {
			t.Errorf("%s changed: the same fingerprint", what)
		}
	}
	given := base
	given.IdempotencyFingerprint = "mine"
	if fingerprintOf(t, given) != "mine" {
		t.Error("Normalize replaced a fingerprint the caller gave")
	}
	none := base
	if _, err := none.Normalize(0); err != nil || none.IdempotencyFingerprint != "" {
		t.Errorf("without a key: fingerprint %q, %v", none.IdempotencyFingerprint, err)
	}
}
