package web

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                 "0 ms",
		450 * time.Millisecond:            "450 ms",
		12 * time.Second:                  "12 s",
		3*time.Minute + 12*time.Second:    "3 m 12 s",
		5 * time.Minute:                   "5 m",
		2*time.Hour + 5*time.Minute:       "2 h 5 m",
		3 * time.Hour:                     "3 h",
		50 * time.Hour:                    "2 d 2 h",
		72 * time.Hour:                    "3 d",
		-(3*time.Minute + 12*time.Second): "3 m 12 s",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestTimeTag(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	if got := string(timeTag(at)); got != `<time datetime="2026-03-04T04:06:07Z">2026-03-04 04:06:07 UTC</time>` {
		t.Errorf("timeTag = %s", got)
	}
	var none *time.Time
	if got := string(timeTag(none)); got != "—" {
		t.Errorf("timeTag(nil) = %s", got)
	}
}

func TestItemRowsRead(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want string // name:percent:state, …
	}{
		{`{"1080p":{"done":30,"total":120,"state":"encoding"},"480p":{"done":120,"total":120},"720p":{"percent":50.5}}`,
			"480p:100:,720p:50:,1080p:25:encoding"},
		{`[{"name":"a.csv","progress":0.25,"status":"parsing"},{"done":1,"total":0}]`, "a.csv:25:parsing,2:0:"},
		{`{"x":{"phase":"upload","percent":140}}`, "x:100:upload"},
		{`"just text"`, ""},
		{`{}`, ""},
		{`null`, ""},
		{``, ""},
	} {
		var got []string
		for _, r := range itemRows(json.RawMessage(c.raw)) {
			got = append(got, r.Name+":"+strconv.FormatInt(r.Percent, 10)+":"+r.State)
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("itemRows(%s) = %v, want %s", c.raw, got, c.want)
		}
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "/ui/",
		"/ui/jobs?state=queued":    "/ui/jobs?state=queued",
		"https://evil.example/ui/": "/ui/",
		"//evil.example/ui/":       "/ui/",
		"/api/v1/jobs":             "/ui/",
		"/ui/\\evil":               "/ui/",
		"javascript:alert(1)":      "/ui/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSessionToken: a session cookie holds a random token and nothing
// else; only its own form parses; the admin secret's tag and the forms'
// tokens depend on the token and on the secret.
func TestSessionToken(t *testing.T) {
	token, cookie, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	got, ok := parseToken(cookie)
	if !ok || string(got) != string(token) || len(token) != tokenBytes {
		t.Fatalf("parseToken(%q) = %x, %v; want %x", cookie, got, ok, token)
	}
	other, _, _ := newToken()
	if string(other) == string(token) {
		t.Fatal("two tokens are the same")
	}
	for _, bad := range []string{"", "v2.", "v1." + cookie[3:], cookie[:len(cookie)-2], cookie + "AA", "v2.!!!!"} {
		if _, ok := parseToken(bad); ok {
			t.Errorf("parseToken(%q) accepted", bad)
		}
	}
	keys := deriveKeys("secret-of-sixteen+")
	if string(keys.tag(token)) == string(keys.tag(other)) || string(keys.tag(token)) == string(deriveKeys("another-secret-16").tag(token)) {
		t.Error("the admin tag does not depend on the token and the secret")
	}
	if keys.csrfToken("a") == keys.csrfToken("b") || keys.csrfToken("a") == deriveKeys("other").csrfToken("a") {
		t.Error("CSRF tokens do not depend on the session and the secret")
	}
}
