package wakeup

import (
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
)

func TestSchedulerKeepsEarliestPerQueue(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	fired := make(chan string, 10)
	s := NewScheduler(fake, func(q string) { fired <- q })
	defer s.Close()

	s.At("a", fake.Now().Add(10*time.Second))
	s.At("a", fake.Now().Add(5*time.Second))  // replaces the later one
	s.At("a", fake.Now().Add(20*time.Second)) // dropped: an earlier one is pending
	s.At("b", fake.Now().Add(-time.Second))   // already due: fires at once
	if q := <-fired; q != "b" {
		t.Fatalf("first wake-up for %q, want b", q)
	}
	fake.Advance(5 * time.Second)
	if q := <-fired; q != "a" {
		t.Fatalf("wake-up for %q, want a", q)
	}
	fake.Advance(time.Minute)
	select {
	case q := <-fired:
		t.Fatalf("unexpected second wake-up for %q", q)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestHubFansOut(t *testing.T) {
	var h Hub[string]
	var got []string
	unsub := h.Subscribe(func(q string) { got = append(got, "1:"+q) })
	h.Subscribe(func(q string) { got = append(got, "2:"+q) })
	h.Send("x")
	unsub()
	h.Send("y")
	if len(got) != 3 {
		t.Fatalf("got %v, want three deliveries", got)
	}
}
