package job_test

import (
	"testing"

	"github.com/jobd/jobd/gateway"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/webhook"
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
