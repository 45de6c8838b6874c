package cli

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeMetrics: /metrics on the API's address and on --metrics-listen
// needs the metrics scope (or the admin secret) with authentication on,
// and nothing with --metrics-public.
func TestServeMetrics(t *testing.T) {
	for _, public := range []bool{false, true} {
		stderr := &lockedBuffer{}
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(string) string { return "" }}
		args := []string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0",
			"--admin-secret", "s3cret-admin-of-metrics", "--metrics-listen", "127.0.0.1:0"}
		if public {
			args = append(args, "--metrics-public")
		}
		ctx, cancel := context.WithCancel(context.Background())
		exit := make(chan int, 1)
		go func() { exit <- Main(ctx, args, env) }()
		base := serveAddress(t, stderr)
		metricsAddr := regexp.MustCompile(`"jobd serving metrics" addr=(\S+)`).FindStringSubmatch(stderr.String())
		if metricsAddr == nil {
			t.Fatalf("no metrics address logged: %s", stderr)
		}
		for _, url := range []string{base + "/metrics", "http://" + metricsAddr[1] + "/metrics"} {
			for _, cred := range []string{"", "s3cret-admin-of-metrics"} {
				req, _ := http.NewRequest("GET", url, nil)
				if cred != "" {
					req.Header.Set("Authorization", "Bearer "+cred)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := http.StatusOK
				if cred == "" && !public {
					want = http.StatusUnauthorized
				}
				if resp.StatusCode != want || (want == http.StatusOK && !strings.Contains(string(body), "jobd_build_info")) {
					t.Errorf("public=%v GET %s with %q: %d, want %d", public, url, cred, resp.StatusCode, want)
				}
			}
		}
		cancel()
		select {
		case code := <-exit:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, stderr)
			}
		case <-time.After(time.Minute):
			t.Fatal("serve did not stop")
		}
	}
}
