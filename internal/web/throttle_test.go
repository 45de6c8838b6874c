package web

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
)

// TestLoginDelays: the first failures are free, then each one doubles
// the wait, up to the maximum.
func TestLoginDelays(t *testing.T) {
	want := map[int]time.Duration{1: 0, 5: 0, 6: time.Second, 7: 2 * time.Second, 8: 4 * time.Second,
		14: 256 * time.Second, 15: loginMaxDelay, 100: loginMaxDelay}
	for n, d := range want {
		if got := loginDelay(n); got != d {
			t.Errorf("loginDelay(%d) = %s, want %s", n, got, d)
		}
	}
}

// TestLoginThrottle: each client has its own run of failures; one that
// must wait is told how long and charged nothing; a success forgets its
// failures, and so does an hour without one. The clock is a fake one:
// nothing sleeps.
func TestLoginThrottle(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	l := newLoginThrottle(clk)
	for i := 0; i < loginFreeFailures+1; i++ {
		if wait := l.begin("a"); wait != 0 {
			t.Fatalf("attempt %d of a: wait %s", i+1, wait)
		}
	}
	// The 6th failure holds a back for a second; b is not held.
	if wait := l.begin("a"); wait != time.Second {
		t.Fatalf("a after 6 failures: wait %s, want 1s", wait)
	}
	if wait := l.begin("b"); wait != 0 {
		t.Fatalf("b: wait %s", wait)
	}
	clk.Advance(400 * time.Millisecond)
	if wait := l.begin("a"); wait != 600*time.Millisecond {
		t.Fatalf("a later: wait %s, want 600ms (a refused attempt is not charged)", wait)
	}
	clk.Advance(600 * time.Millisecond)
	if wait := l.begin("a"); wait != 0 {
		t.Fatalf("a once the wait passed: %s", wait)
	}
	if wait := l.begin("a"); wait != 2*time.Second {
		t.Fatalf("a after 7 failures: wait %s, want 2s", wait)
	}
	clk.Advance(2 * time.Second)
	l.begin("a")
	l.succeeded("a")
	for i := 0; i < loginFreeFailures; i++ {
		if wait := l.begin("a"); wait != 0 {
			t.Fatalf("a after a success, attempt %d: wait %s", i+1, wait)
		}
	}
	// An hour after its last failure, a client starts afresh.
	l.begin("c")
	for i := 0; i < loginFreeFailures; i++ {
		l.begin("c")
	}
	clk.Advance(loginForgetAfter)
	for i := 0; i < loginFreeFailures; i++ {
		if wait := l.begin("c"); wait != 0 {
			t.Fatalf("c an hour later, attempt %d: wait %s", i+1, wait)
		}
	}
}

// TestLoginThrottleBounded: the table never holds more than
// loginMaxClients clients; a full one forgets the oldest.
func TestLoginThrottleBounded(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	l := newLoginThrottle(clk)
	for i := 0; i < loginMaxClients+10; i++ {
		l.begin(fmt.Sprint("client-", i))
		clk.Advance(time.Millisecond)
	}
	if n := len(l.clients); n != loginMaxClients {
		t.Fatalf("%d clients tracked, want %d", n, loginMaxClients)
	}
	if _, ok := l.clients["client-0"]; ok {
		t.Error("the oldest client is still tracked")
	}
	if _, ok := l.clients[fmt.Sprint("client-", loginMaxClients+9)]; !ok {
		t.Error("the newest client is not tracked")
	}
}

// TestClientOf: the client is the connection's address, an IPv6 one by
// its /64; headers are not read.
func TestClientOf(t *testing.T) {
	cases := map[string]string{
		"192.0.2.7:4711":              "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:4711": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:80":   "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:4711":     "192.0.2.7",
		"not an address":              "not an address",
		"[fe80::1%eth0]:4711":         "fe80::/64",
	}
	for addr, want := range cases {
		r := &http.Request{RemoteAddr: addr, Header: http.Header{"X-Forwarded-For": {"203.0.113.9"}, "X-Real-Ip": {"203.0.113.9"}}}
		if got := clientOf(r); got != want {
			t.Errorf("clientOf(%q) = %q, want %q", addr, got, want)
		}
	}
}
