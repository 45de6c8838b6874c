package gateway

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
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

// TestCheckPath: a ".." segment, as it is or percent-encoded once or
// twice, with "/" or "\\" as separator or a ";" parameter, is refused with
// a 400 naming the path; other escapes, and dots that are no segment,
// pass.
func TestCheckPath(t *testing.T) {
	for _, bad := range []string{
		"/..", "/a/../b", "/%2e%2e", "/%2E%2E/x", "/.%2e/x", "/%2e./x", "/..%2f", "/..%2Fadmin",
		"/a/..%5cb", "/a%2f..%2fb", "/%2e%2e%2fetc%2fpasswd", "/%252e%252e%252f", "/%25252e%25252e/x",
		"/..;x/y", "/%2e%2e;jsessionid=1/y", "\\..\\x", "/a/%2e%2e",
	} {
		err := checkPath(bad)
		var p *problem.Error
		if !errors.As(err, &p) || p.Type != api.ProblemBadRequest || p.Field != "path" || !strings.Contains(p.Detail, strconv.Quote(bad)) {
			t.Errorf("checkPath(%q) = %v, want a bad-request problem naming the path", bad, err)
		}
	}
	for _, good := range []string{
		"", "/", "/a/b", "/a%2Fb", "/a%20b", "/a..b", "/...", "/..a", "/a%2e", "/.%2e%2e", "/%2e", "/./a", "/a%zz", "/%", "/x?..",
	} {
		if err := checkPath(good); err != nil {
			t.Errorf("checkPath(%q) = %v, want nil", good, err)
		}
	}
	u, err := ParseUpstream("x=http://h/api")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&upstream{Upstream: u}).target("/%2e%2e/admin?x=1"); err == nil {
		t.Error("target of an encoded dot segment: no error")
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
		// ArangoDB runs a request whose x-arango-async is anything else
		// synchronously.
		{http.Header{"X-Arango-Async": {"yes"}}, modeSync, true},
		{http.Header{"X-Arango-Async": {"1"}}, modeSync, true},
		{http.Header{"X-Arango-Async": {"stored"}}, modeSync, true},
		{http.Header{"X-Async": {"store"}, "X-Arango-Async": {"later"}}, modeStore, true},
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
