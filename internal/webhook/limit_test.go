package webhook

import (
	"testing"
	"time"

	"github.com/jobd/jobd/store"
)

func TestAllow(t *testing.T) {
	var l store.WebhookLimit
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	steps := []struct {
		at         time.Duration
		send       bool
		suppressed int
	}{
		{0, true, 0},
		{time.Second, false, 0},
		{59 * time.Second, false, 0},
		{time.Minute, true, 2}, // a minute after the last one sent: out, counting two
		{time.Minute + time.Second, false, 0},
		{3 * time.Minute, true, 1},
		{10 * time.Minute, true, 0},
	}
	for i, st := range steps {
		send, n := allow(&l, t0.Add(st.at), time.Minute)
		if send != st.send || n != st.suppressed {
			t.Fatalf("step %d (+%s): allow = %v, %d; want %v, %d", i, st.at, send, n, st.send, st.suppressed)
		}
	}
	if l.Suppressed != 0 || !l.SentAt.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("limit after the steps = %+v", l)
	}
}

func TestCountFailure(t *testing.T) {
	var l store.WebhookLimit
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const window, count = 10 * time.Minute, 3
	steps := []struct {
		at      time.Duration
		pattern bool
	}{
		{0, false},
		{time.Minute, false},
		{11 * time.Minute, false}, // the first window closed: a new one opens here
		{12 * time.Minute, false},
		{13 * time.Minute, true}, // three within ten minutes
		{14 * time.Minute, false},
		{15 * time.Minute, false},
		{16 * time.Minute, true},
	}
	for i, st := range steps {
		pattern, n := countFailure(&l, t0.Add(st.at), window, count)
		if pattern != st.pattern || (pattern && n != count) {
			t.Fatalf("step %d (+%s): countFailure = %v, %d; want %v", i, st.at, pattern, n, st.pattern)
		}
	}
}
