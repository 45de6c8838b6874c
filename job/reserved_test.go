package job_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/schedule"
)

// TestServicesUseReservedNames holds the reserved lists to the queues and
// kinds jobd's own services insert: a service that names a new queue or
// kind outside them fails here.
func TestServicesUseReservedNames(t *testing.T) {
	for _, q := range []string{gateway.Queue, process.DefaultQueue, webhook.Queue} {
		if !job.ReservedQueue(q) {
			t.Errorf("queue %q of a jobd service is not reserved", q)
		}
	}
	for _, k := range []string{gateway.Kind, process.KindTask, process.KindTimer, webhook.Kind} {
		if !job.ReservedKind(k) {
			t.Errorf("kind %q of a jobd service is not reserved", k)
		}
	}
	for _, name := range []string{"default", "video", "jobd", "gateways", "process", "gateway.requests", "jobdx.y"} {
		if job.ReservedQueue(name) || job.ReservedKind(name) {
			t.Errorf("%q is reserved, want free", name)
		}
	}
}

// TestServicesUseReservedKeys holds the reserved key prefixes to the
// idempotency and lock keys jobd's own services derive: a service that
// derives a key outside them fails here.
func TestServicesUseReservedKeys(t *testing.T) {
	for _, k := range []string{
		schedule.TickKey("nightly", time.Now()), schedule.TriggerKey("nightly", "k"),
		process.IdempotencyKey("ns", "id", "k"), gateway.IdempotencyPrefix + "k",
	} {
		if !job.ReservedIdempotencyKey(k) {
			t.Errorf("idempotency key %q of a jobd service is not reserved", k)
		}
	}
	if k := process.LockKey("ns", "id"); !job.ReservedLockKey(k) {
		t.Errorf("lock key %q of a jobd service is not reserved", k)
	}
	for _, k := range []string{"", "order-42", "schedules:x", "processes:x", "gateways:x", "jobd.x", "Schedule:x"} {
		if job.ReservedIdempotencyKey(k) || job.ReservedLockKey(k) {
			t.Errorf("key %q is reserved, want free", k)
		}
	}
}

// TestCheckCallerInsert: a caller's insert naming a reserved queue,
// kind, idempotency key or lock key is refused naming that field; one
// naming none passes.
func TestCheckCallerInsert(t *testing.T) {
	for field, p := range map[string]job.InsertParams{
		"queue":           {Queue: "jobd.webhooks", Kind: "k"},
		"kind":            {Kind: "process.timeout"},
		"idempotency_key": {Kind: "k", IdempotencyKey: "schedule:s:2030-01-01T00:00:00Z"},
		"lock_key":        {Kind: "k", LockKey: "process:ns/id"},
	} {
		err := job.CheckCallerInsert(&p)
		var verr *job.ValidationError
		if !errors.As(err, &verr) || verr.Field != field {
			t.Errorf("%+v: %v, want a validation error naming %s", p, err, field)
		}
	}
	if err := job.CheckCallerInsert(&job.InsertParams{Kind: "k", IdempotencyKey: "order-42", LockKey: "x"}); err != nil {
		t.Errorf("a caller's own names: %v", err)
	}
	if err := job.CheckCallerRerun(&job.Job{Queue: "jobd.webhooks", Kind: "jobd.webhook"}); err == nil {
		t.Error("new args for a rerun of a webhook delivery passed")
	}
	if err := job.CheckCallerRerun(&job.Job{Queue: "video", Kind: "transcode"}); err != nil {
		t.Errorf("new args for a rerun of a caller's job: %v", err)
	}
}
