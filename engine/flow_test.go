package engine

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestPace: how soon a short claim of a queue is tried again, by what
// limits or throttles it.
func TestPace(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	const poll = 2 * time.Second
	v := newFlowView()
	v.replace([]store.QueueSettings{
		{Name: "plain"},
		{Name: "paused", Paused: true},
		{Name: "global", Limits: flow.Limits{GlobalLimit: 5}},
		{Name: "paused-global", Paused: true, Limits: flow.Limits{GlobalLimit: 5}},
		{Name: "partition", Limits: flow.Limits{PartitionLimit: 2}},
		{Name: "rate20", Limits: flow.Limits{Rate: &flow.Rate{Limit: 20, Period: time.Second}}},
		{Name: "rate1000", Limits: flow.Limits{Rate: &flow.Rate{Limit: 1000, Period: time.Second}}},
		{Name: "slow", Limits: flow.Limits{Rate: &flow.Rate{Limit: 1, Period: time.Hour}}},
		{Name: "rate-and-global", Limits: flow.Limits{GlobalLimit: 1, Rate: &flow.Rate{Limit: 20, Period: time.Second}}},
		{Name: "throttled", Limits: flow.Limits{GlobalLimit: 5}, ThrottledUntil: at(time.Hour)},
		{Name: "throttle-passed", ThrottledUntil: at(-time.Second)},
		{Name: "by-partition", Limits: flow.Limits{ThrottleBy: flow.ByPartitionKey}},
		{Name: "partitions", Limits: flow.Limits{ThrottleBy: flow.ByPartitionKey},
			Throttled: []store.PartitionThrottle{{PartitionKey: "a", Until: now.Add(300 * time.Millisecond)}}},
	})
	for queue, want := range map[string]time.Duration{
		"unknown":         0,
		"plain":           0,
		"paused":          0,
		"global":          limitPace,
		"paused-global":   0,
		"partition":       limitPace,
		"rate20":          25 * time.Millisecond,
		"rate1000":        minPace,
		"slow":            poll,
		"rate-and-global": 25 * time.Millisecond,
		"throttled":       time.Hour, // past the poll: the throttle ends when it ends
		"throttle-passed": 0,
		"by-partition":    0,
		"partitions":      300 * time.Millisecond,
	} {
		d, ok := v.pace(queue, now, poll)
		if d != want || ok != (want > 0) {
			t.Errorf("pace of %s = %s, %t; want %s", queue, d, ok, want)
		}
	}
}

// TestFlowViewChanges: a refresh names the queues whose settings changed,
// and every limited one after refreshes were skipped.
func TestFlowViewChanges(t *testing.T) {
	t.Parallel()
	v := newFlowView()
	a := store.QueueSettings{Name: "a", Limits: flow.Limits{GlobalLimit: 1}}
	b := store.QueueSettings{Name: "b", Limits: flow.Limits{GlobalLimit: 2}}
	if got := v.replace([]store.QueueSettings{a, b, {Name: "plain"}}); len(got) != 2 {
		t.Errorf("first read: changed %v, want a and b", got)
	}
	if got := v.replace([]store.QueueSettings{a, b}); len(got) != 0 {
		t.Errorf("same settings: changed %v", got)
	}
	b.Limits.GlobalLimit = 3
	got := v.replace([]store.QueueSettings{b})
	slices.Sort(got)
	if !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("a gone, b changed: changed %v", got)
	}
	v.fresh = false // refreshes skipped
	if got := v.replace([]store.QueueSettings{b}); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("after skipped refreshes: changed %v, want b", got)
	}
}

func TestParseQueuesLimits(t *testing.T) {
	t.Parallel()
	qs, err := ParseQueues([]byte(`[{"queue":"api","concurrency":4,"global_limit":5,"partition_limit":2,
		"rate":{"limit":100,"period":"1m","by":"partition_key","burst":10},"throttle_by":"partition_key"},
		{"queue":"plain","concurrency":1}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := flow.Limits{GlobalLimit: 5, PartitionLimit: 2, ThrottleBy: flow.ByPartitionKey,
		Rate: &flow.Rate{Limit: 100, Period: time.Minute, By: flow.ByPartitionKey, Burst: 10}}
	if !reflect.DeepEqual(qs[0].Limits, want) || qs[0].Concurrency != 4 {
		t.Errorf("api: %+v, limits %s; want %s", qs[0], qs[0].Limits, want)
	}
	if qs[1].Limits.Limited() {
		t.Errorf("plain: limits %s", qs[1].Limits)
	}
	for _, tc := range []struct{ in, field string }{
		{`[{"queue":"a","concurrency":1,"global_limit":-1}]`, "queues[0].global_limit"},
		{`[{"queue":"a","concurrency":1,"global_limit":"5"}]`, "queues[0]"},
		{`[{"queue":"a","concurrency":1},{"queue":"b","concurrency":1,"partition_limit":2000000}]`, "queues[1].partition_limit"},
		{`[{"queue":"a","concurrency":1,"throttle_by":"tenant"}]`, "queues[0].throttle_by"},
		{`[{"queue":"a","concurrency":1,"rate":{"limit":0,"period":"1s"}}]`, "queues[0].rate.limit"},
		{`[{"queue":"a","concurrency":1,"rate":{"limit":5}}]`, "queues[0].rate.period"},
		{`[{"queue":"a","concurrency":1,"rate":{"limit":5,"period":"soon"}}]`, "queues[0].rate.period"},
		{`[{"queue":"a","concurrency":1,"rate":{"limit":5,"period":"0s"}}]`, "queues[0].rate.period"},
		{`[{"queue":"a","concurrency":1,"rate":{"limit":5,"period":"1s","by":"tenant"}}]`, "queues[0].rate.by"},
		{`[{"queue":"a","concurrency":1,"rate":{"limit":5,"period":"1s","burst":-1}}]`, "queues[0].rate.burst"},
		{`[{"queue":"a","concurrency":1,"rate":{"limit":5,"period":"1s","brust":2}}]`, "queues[0]"},
	} {
		_, err := ParseQueues([]byte(tc.in))
		var ve *job.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("ParseQueues(%s) = %v, want a validation error of field %s", tc.in, err, tc.field)
		}
	}
}
