package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
)

func TestParseQueues(t *testing.T) {
	t.Parallel()
	qs, err := ParseQueues([]byte(`[{"queue":"default","concurrency":4},
		{"queue":"loads","concurrency":2,"backoff":{"kind":"linear","step":"30s"}}]`))
	if err != nil {
		t.Fatalf("ParseQueues: %v", err)
	}
	want := []QueueConfig{
		{Queue: "default", Concurrency: 4},
		{Queue: "loads", Concurrency: 2, Backoff: Backoff{Kind: BackoffLinear, Step: 30 * time.Second, Jitter: 0.2}},
	}
	if len(qs) != len(want) {
		t.Fatalf("got %d queues, want %d", len(qs), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(qs[i], want[i]) {
			t.Errorf("queue %d = %+v, want %+v", i, qs[i], want[i])
		}
	}
}

func TestParseQueuesErrorsNameTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, field string }{
		{`{"queue":"x"}`, "queues"},
		{`[{"queue":"","concurrency":1}]`, "queues[0].queue"},
		{`[{"queue":"a","concurrency":1},{"queue":"b","concurrency":0}]`, "queues[1].concurrency"},
		{`[{"queue":"a","concurrency":1},{"queue":"a","concurrency":1}]`, "queues[1].queue"},
		{`[{"queue":"a","concurrency":1,"workers":3}]`, "queues[0]"},
		{`[{"queue":"a","concurrency":1,"backoff":{"base":"10"}}]`, "queues[0].backoff.base"},
		{`[{"queue":"a","concurrency":1,"backoff":{"kind":"fibonacci"}}]`, "queues[0].backoff.kind"},
		{`[{"queue":"a","concurrency":1,"backoff":{"jitter":2}}]`, "queues[0].backoff.jitter"},
	} {
		_, err := ParseQueues([]byte(tc.in))
		var ve *job.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("ParseQueues(%s) = %v, want a validation error of field %s", tc.in, err, tc.field)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	var ve *job.ValidationError
	if err := (Config{}).Validate(); !errors.As(err, &ve) || ve.Field != "Store" {
		t.Errorf("Validate without a store = %v, want an error naming Store", err)
	}
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "Store") {
		t.Errorf("New without a store = %v, want an error naming Store", err)
	}
}

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	c := Config{PollInterval: time.Second}.WithDefaults()
	if c.PollInterval != time.Second || c.HeartbeatInterval != DefaultHeartbeatInterval ||
		c.Retention != DefaultRetention || c.ShutdownTimeout != DefaultShutdownTimeout ||
		c.ReaperInterval != DefaultReaperInterval || c.ProgressInterval != DefaultProgressInterval {
		t.Errorf("WithDefaults = %+v", c)
	}
	if c.Node == "" || c.Logger == nil || c.Clock == nil {
		t.Errorf("WithDefaults left Node, Logger or Clock empty: %+v", c)
	}
	if other := (Config{}).WithDefaults(); other.Node == c.Node {
		t.Errorf("two default node names are both %q", c.Node)
	}
}
