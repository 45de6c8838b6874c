package gateway

import (
	"net/http"
	"testing"
	"time"
)

func TestParseUpstream(t *testing.T) {
	u, err := ParseUpstream(" reports = https://user:pw@example.com/api ")
	if err != nil || u.Name != "reports" || u.URL.Host != "example.com" || u.URL.Path != "/api" || u.URL.User.Username() != "user" {
		t.Fatalf("ParseUpstream: %+v, %v", u, err)
	}
	for _, bad := range []string{"noequals", "=http://x", "a b=http://x", "x=ftp://h", "x=http://", "x=http://h/?q=1", "x=:bad"} {
		if _, err := ParseUpstream(bad); err == nil {
			t.Errorf("ParseUpstream(%q) accepted", bad)
		}
	}
}

func TestTarget(t *testing.T) {
	cases := []struct{ base, rest, want string }{
		{"http://h", "", "http://h/"},
		{"http://h", "/a/b?x=1", "http://h/a/b?x=1"},
		{"http://h/api", "/a", "http://h/api/a"},
		{"http://h/api/", "/a", "http://h/api/a"},
		{"http://h/api", "", "http://h/api"},
		{"http://u:p@h/api", "/a%2Fb?q=%20", "http://h/api/a%2Fb?q=%20"},
	}
	for _, c := range cases {
		u, err := ParseUpstream("x=" + c.base)
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&upstream{Upstream: u}).target(c.rest)
		if err != nil || got.String() != c.want {
			t.Errorf("target(%q, %q) = %v, %v; want %s", c.base, c.rest, got, err, c.want)
		}
	}
}

func TestSplitForward(t *testing.T) {
	cases := []struct{ path, name, rest string }{
		{"/gw/a", "a", ""},
		{"/gw/a/", "a", "/"},
		{"/gw/a/b/c", "a", "/b/c"},
	}
	for _, c := range cases {
		name, rest, ok := splitForward(c.path)
		if !ok || name != c.name || rest != c.rest {
			t.Errorf("splitForward(%q) = %q, %q, %v", c.path, name, rest, ok)
		}
	}
	if _, _, ok := splitForward("/gw/"); ok {
		t.Error("splitForward accepted an empty name")
	}
}

func TestReadMode(t *testing.T) {
	cases := []struct {
		h    http.Header
		want asyncMode
		ok   bool
	}{
		{http.Header{}, modeSync, true},
		{http.Header{"X-Async": {"TRUE"}}, modeForget, true},
		{http.Header{"X-Arango-Async": {"store"}}, modeStore, true},
		{http.Header{"X-Async": {"store"}, "X-Arango-Async": {"store"}}, modeStore, true},
		{http.Header{"X-Async": {"false"}}, modeSync, true},
		{http.Header{"X-Async": {"true"}, "X-Arango-Async": {"store"}}, 0, false},
		{http.Header{"X-Async": {"yes"}}, 0, false},
	}
	for _, c := range cases {
		got, err := readMode(c.h)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("readMode(%v) = %v, %v", c.h, got, err)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{"-1", 0, false},
		{"99999999", maxRetryAfter, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
	}
	for _, c := range cases {
		got, ok := retryAfter(c.v, now)
		if ok != c.ok || got != c.want {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

func TestDropHopHeaders(t *testing.T) {
	h := http.Header{
		"Connection": {"close, X-Private"}, "X-Private": {"1"}, "Keep-Alive": {"5"},
		"Transfer-Encoding": {"chunked"}, "Upgrade": {"h2c"}, "X-Kept": {"yes"},
	}
	dropHopHeaders(h)
	if len(h) != 1 || h.Get("X-Kept") != "yes" {
		t.Fatalf("left %v", h)
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("New accepted an empty config")
	}
}

func TestParseUpstreams(t *testing.T) {
	ups, err := ParseUpstreams([]string{"a=http://h1, b=http://h2/x", "c=https://h3"}, []string{"5m", "b=30s"})
	if err != nil || len(ups) != 3 {
		t.Fatalf("ParseUpstreams: %+v, %v", ups, err)
	}
	if ups[0].Timeout != 5*time.Minute || ups[1].Timeout != 30*time.Second || ups[2].Timeout != 5*time.Minute {
		t.Fatalf("timeouts %v %v %v", ups[0].Timeout, ups[1].Timeout, ups[2].Timeout)
	}
	if ups, err := ParseUpstreams(nil, nil); err != nil || len(ups) != 0 {
		t.Fatalf("no upstreams: %v, %v", ups, err)
	}
	for _, c := range []struct{ ups, timeouts []string }{
		{[]string{"a"}, nil},
		{[]string{"a=http://h"}, []string{"z=1m"}},
		{[]string{"a=http://h"}, []string{"a=soon"}},
		{[]string{"a=http://h"}, []string{"-1s"}},
	} {
		if _, err := ParseUpstreams(c.ups, c.timeouts); err == nil {
			t.Errorf("ParseUpstreams(%v, %v) accepted", c.ups, c.timeouts)
		}
	}
}
