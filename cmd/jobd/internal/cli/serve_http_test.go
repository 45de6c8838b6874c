package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
)

// startServe runs jobd serve in-process with args (beyond --database and
// --listen, 127.0.0.1:0 unless given) until the test ends, and returns its
// URL and its log.
func startServe(t *testing.T, database string, args ...string) (string, *lockedBuffer) {
	t.Helper()
	stderr := &lockedBuffer{}
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(string) string { return "" }}
	all := append([]string{"serve", "--database", database, "--listen", "127.0.0.1:0"}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() { exit <- Main(ctx, all, env) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-exit:
			if code != 0 {
				t.Errorf("serve exited %d: %s", code, stderr)
			}
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
	})
	return serveAddress(t, stderr), stderr
}

// databases are a fresh database of each store, as --database.
func databases(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "jobd.db") },
		"postgres": func(t *testing.T) string { return migrated.NewDatabase(t) },
	}
}

// get sends a request with the "Name: value" headers hdr.
func get(t *testing.T, method, url, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		if k == "Host" {
			req.Host = v
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestServeLimits: with timeouts far shorter than their waits, jobd
// serve's long-polls and streams still answer whole, a stream ends at its
// maximum age, a slow body is cut and the metrics server closes an idle
// connection.
func TestServeLimits(t *testing.T) {
	for driver, database := range databases(t) {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			base, stderr := startServe(t, database(t), "--read-timeout", "300ms", "--write-timeout", "600ms", "--idle-timeout", "300ms",
				"--stream-max-age", "1s", "--metrics-listen", "127.0.0.1:0")
			resp, body := get(t, "POST", base+"/api/v1/jobs", `{"kind":"k","queue":"idle"}`, "Content-Type: application/json")
			var j api.Job
			if resp.StatusCode != 201 || json.Unmarshal([]byte(body), &j) != nil {
				t.Fatalf("submit: %d %s", resp.StatusCode, body)
			}
			id := j.ID.String()

			// A long-poll of 1s, past both timeouts: the queued job, whole.
			resp, body = get(t, "GET", base+"/api/v1/jobs/"+id+"?wait=1s", "")
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &j) != nil || j.State != api.StateQueued {
				t.Fatalf("long-poll: %d %q", resp.StatusCode, body)
			}

			// A stream lives to its maximum age, past the write timeout.
			br := openStream(t, base, id)
			rest, _ := io.ReadAll(br)
			if !strings.HasSuffix(string(rest), "retry: 1000\n\n") {
				t.Fatalf("the stream ended with %q, want retry: 1000", rest)
			}

			// A body that does not come within the read timeout: 400
			// (written within the write timeout, which runs from the end of
			// the headers).
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = io.WriteString(c, "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 400 {
				t.Fatalf("a slow body: %v %v", resp, err)
			}

			// The metrics server closes a connection that sends nothing.
			m := regexp.MustCompile(`"jobd serving metrics" addr=(\S+)`).FindStringSubmatch(stderr.String())
			if m == nil {
				t.Fatalf("no metrics address logged: %s", stderr)
			}
			idle, err := net.Dial("tcp", m[1])
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close()
			_ = idle.SetReadDeadline(time.Now().Add(time.Minute))
			if n, err := idle.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("an idle connection to the metrics server: %d, %v; want closed", n, err)
			}
		})
	}
}

// openStream opens the job's event stream at base and reads its first
// event's first line.
func openStream(t *testing.T, base, id string) *bufio.Reader {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+"/api/v1/jobs/"+id+"/stream", nil)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Body.Close() })
	br := bufio.NewReader(stream.Body)
	if line, _ := br.ReadString('\n'); line != "event: job\n" {
		t.Fatalf("stream: %d %q", stream.StatusCode, line)
	}
	return br
}

// TestServeBrowserRules: jobd serve on a loopback address answers only
// loopback Host names, on every route (API, dashboard, gateway, metrics);
// the gateway refuses cross-site requests but forwards any body; the
// dashboard lets a link from another site through, not a fetch. And the
// API's and the dashboard's streams share --max-streams.
func TestServeBrowserRules(t *testing.T) {
	var calls atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, "upstream ok")
	}))
	defer upstream.Close()
	base, stderr := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "jobd.db"), "--upstream", "up="+upstream.URL,
		"--metrics-listen", "127.0.0.1:0", "--max-streams", "1")
	metrics := "http://" + regexp.MustCompile(`"jobd serving metrics" addr=(\S+)`).FindStringSubmatch(stderr.String())[1]

	for _, url := range []string{base + "/api/v1/jobs", base + "/ui/", base + "/gw/up/x", base + "/health", metrics + "/metrics"} {
		if resp, body := get(t, "GET", url, "", "Host: rebind.example:8080"); resp.StatusCode != 403 || !strings.Contains(body, `"field":"Host"`) {
			t.Errorf("GET %s with a foreign Host: %d %s", url, resp.StatusCode, body)
		}
		if resp, _ := get(t, "GET", url, "", "Host: localhost:8080"); resp.StatusCode == 403 {
			t.Errorf("GET %s with Host localhost: 403", url)
		}
	}

	if resp, _ := get(t, "GET", metrics+"/metrics", "", "Sec-Fetch-Site: cross-site"); resp.StatusCode != 403 {
		t.Errorf("a cross-site read of the metrics server: %d", resp.StatusCode)
	}
	if resp, _ := get(t, "POST", base+"/gw/up/x", "a=1", "Sec-Fetch-Site: cross-site"); resp.StatusCode != 403 || calls.Load() != 1 {
		t.Errorf("a cross-site post to the gateway: %d, upstream called %d times (once by the Host check above)", resp.StatusCode, calls.Load())
	}
	if resp, body := get(t, "POST", base+"/gw/up/x", "a=1", "Content-Type: text/plain"); resp.StatusCode != 200 || body != "upstream ok" {
		t.Errorf("a text/plain body to the gateway: %d %q, want it forwarded", resp.StatusCode, body)
	}
	if resp, body := get(t, "POST", base+"/api/v1/jobs", `{"kind":"k"}`, "Content-Type: text/plain"); resp.StatusCode != 415 {
		t.Errorf("a text/plain job: %d %s, want 415", resp.StatusCode, body)
	}

	nav := []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"}
	if resp, _ := get(t, "GET", base+"/ui/", "", nav...); resp.StatusCode != 200 {
		t.Errorf("a link to the dashboard from another site: %d", resp.StatusCode)
	}
	if resp, _ := get(t, "GET", base+"/ui/summary", "", "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: cors"); resp.StatusCode != 403 {
		t.Errorf("another site's fetch of the dashboard: %d", resp.StatusCode)
	}

	resp, body := get(t, "POST", base+"/api/v1/jobs", `{"kind":"k","queue":"idle"}`, "Content-Type: application/json")
	var j api.Job
	if resp.StatusCode != 201 || json.Unmarshal([]byte(body), &j) != nil {
		t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	openStream(t, base, j.ID.String())
	for _, path := range []string{"/api/v1/jobs/" + j.ID.String() + "/stream", "/ui/jobs/" + j.ID.String() + "/stream"} {
		if resp, body := get(t, "GET", base+path, ""); resp.StatusCode != 429 || !strings.Contains(body, api.ProblemTooManyRequests) {
			t.Errorf("GET %s beside an open stream, --max-streams 1: %d %s", path, resp.StatusCode, body)
		}
	}
}

// TestServeAnyHostOffLoopback: listening on every address, jobd serve
// answers any Host.
func TestServeAnyHostOffLoopback(t *testing.T) {
	base, _ := startServe(t, "sqlite:"+filepath.Join(t.TempDir(), "jobd.db"), "--listen", ":0")
	base = strings.Replace(base, "[::]", "127.0.0.1", 1)
	if resp, body := get(t, "GET", base+"/health", "", "Host: jobd.example.com"); resp.StatusCode != 200 {
		t.Errorf("GET /health with Host jobd.example.com: %d %s", resp.StatusCode, body)
	}
}

func TestServeHTTPFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--read-timeout", "0"}, {"--write-timeout", "-1s"}, {"--idle-timeout", "0"},
		{"--max-streams", "0"}, {"--max-streams-per-key", "-1"}, {"--stream-max-age", "0"},
	} {
		stderr := &lockedBuffer{}
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(string) string { return "" }}
		all := append([]string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0"}, args...)
		if code := Main(context.Background(), all, env); code != 2 || !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("serve %v: exit %d, want 2 naming the flag (%s)", args, code, stderr)
		}
	}
}
