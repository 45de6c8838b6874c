package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jobd/jobd/internal/testutil/testsignal"
)

// lockedBuffer is a bytes.Buffer safe for a logger and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestServeGateway: jobd serve with JOBD_UPSTREAMS mounts the gateway
// beside the API, with its worker pool and its result routes under both
// prefixes, and stops cleanly.
func TestServeGateway(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "report "+r.URL.Path)
	}))
	defer upstream.Close()

	stderr := &lockedBuffer{}
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(k string) string {
		return map[string]string{"JOBD_UPSTREAMS": "reports=" + upstream.URL}[k]
	}}
	testsignal.Of(&env.points.listening).Init()
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- Main(ctx, []string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"),
			"--listen", "127.0.0.1:0", "--upstream-timeout", "reports=30s"}, env)
	}()
	defer func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("serve exited %d: %s", code, stderr)
		}
	}()
	base := "http://" + testsignal.Of(&env.points.listening).Wait(t, "serve to listen")

	req, _ := http.NewRequest("GET", base+"/gw/reports/june", nil)
	req.Header.Set("X-Async", "store")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("X-Async-Id")
	if resp.StatusCode != http.StatusAccepted || id == "" {
		t.Fatalf("submit: %d, id %q", resp.StatusCode, id)
	}
	// The result is pending (204) or there (200); the job's long-poll
	// says when it is there.
	result := func() int {
		t.Helper()
		resp, err := http.Get(base + "/api/v1/async/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
			t.Fatalf("GET result: %d", resp.StatusCode)
		}
		return resp.StatusCode
	}
	result()
	resp, err = http.Get(base + "/api/v1/jobs/" + id + "?wait=30s")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code := result(); code != http.StatusOK {
		t.Fatalf("GET result once the job is final: %d", code)
	}
	req, _ = http.NewRequest("PUT", base+"/_api/job/"+id, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "report /june" {
		t.Fatalf("fetch: %d %q", resp.StatusCode, body)
	}
}

func TestServeGatewayFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--upstream", "nourl"},
		{"--upstream", "a=ftp://x"},
		{"--upstream", "a=http://x", "--upstream-timeout", "b=1m"},
		{"--upstream", "a=http://x", "--upstream", "a=http://y"},
		{"--upstream", "a=http://x", "--async-max-pending", "0"},
	} {
		var stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
		all := append([]string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0"}, args...)
		if code := Main(context.Background(), all, env); code != 2 {
			t.Errorf("serve %v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}

// TestServeWeakAdminSecret: jobd serve refuses an admin secret under 16
// characters, given by the flag or the variable, as a usage error (exit
// 2) whose message names both and the minimum, not the secret; 16
// characters (not bytes) pass the check.
func TestServeWeakAdminSecret(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  string
	}{
		{[]string{"--admin-secret", "s3cret"}, ""},
		{nil, "fifteen-chars-x"},
		{nil, "ééééééééééééééé"}, // 15 characters, 30 bytes
	} {
		var stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(k string) string {
			return map[string]string{"JOBD_ADMIN_SECRET": c.env}[k]
		}}
		all := append([]string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0"}, c.args...)
		code := Main(context.Background(), all, env)
		msg := stderr.String()
		if code != 2 || !strings.Contains(msg, "--admin-secret (JOBD_ADMIN_SECRET) must be at least 16 characters") {
			t.Errorf("serve %v, env %q: exit %d, %q; want 2 and a message naming the flag, the variable and 16", c.args, c.env, code, msg)
		}
		for _, secret := range append(c.args, c.env) {
			if secret != "" && secret != "--admin-secret" && strings.Contains(msg, secret) {
				t.Errorf("the message shows the secret: %q", msg)
			}
		}
	}
	for _, ok := range []string{"", "0123456789abcdef", "éééééééééééééééé"} {
		if err := checkAdminSecret(ok); err != nil {
			t.Errorf("checkAdminSecret(%q): %v", ok, err)
		}
	}
}
