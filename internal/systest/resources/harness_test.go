package resources

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jobd/jobd/internal/testutil/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// buildJobd builds the jobd binary of this checkout into dir, without
// -race: the figures are the shipped binary's. JOBD_RESOURCES_BIN names
// another binary to run instead.
func buildJobd(t *testing.T, dir string) string {
	t.Helper()
	if bin := os.Getenv("JOBD_RESOURCES_BIN"); bin != "" {
		return bin
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "jobd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/jobd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/jobd: %v\n%s", err, out)
	}
	return bin
}

// node is a `jobd serve` subprocess. The test ends only this process,
// by its id.
type node struct {
	cmd     *exec.Cmd
	addr    string // host:port it listens on
	base    string // http://addr
	secret  string // the admin secret
	logPath string
	done    chan struct{} // closed once it exited
	http    *http.Client  // the test's own reads (metrics), kept alive
}

// startNode starts bin serving database with settings (flag=value, given
// as JOBD_* variables) and waits until it listens.
func startNode(t *testing.T, bin, database string, settings map[string]string) *node {
	t.Helper()
	n := &node{secret: "resources-admin-secret-" + strconv.Itoa(os.Getpid()),
		logPath: filepath.Join(t.TempDir(), "jobd.log"), done: make(chan struct{}),
		http: &http.Client{Timeout: time.Minute}}
	logFile, err := os.Create(n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(bin, "serve")
	// Should the test binary die without its cleanups, the node dies too.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JOBD_") {
			n.cmd.Env = append(n.cmd.Env, kv)
		}
	}
	all := map[string]string{
		"database": database, "listen": "127.0.0.1:0", "admin-secret": n.secret,
		"log-format": "json", "workers": `[{"queue":"default","concurrency":1}]`,
	}
	for k, v := range settings {
		all[k] = v
	}
	for k, v := range all {
		n.cmd.Env = append(n.cmd.Env, "JOBD_"+strings.ToUpper(strings.ReplaceAll(k, "-", "_"))+"="+v)
	}
	stderr, err := n.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	n.cmd.Stdout = logFile
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go n.readLog(stderr, logFile, listening)
	t.Cleanup(n.stop)
	select {
	case n.addr = <-listening:
	case <-n.done:
		t.Fatalf("jobd serve exited before it listened:\n%s", n.logTail())
	case <-time.After(2 * time.Minute):
		t.Fatalf("jobd serve did not listen:\n%s", n.logTail())
	}
	n.base = "http://" + n.addr
	return n
}

// readLog copies the node's log lines to its file and sends the address
// of its "jobd serving" line to listening; it closes done at the end.
func (n *node) readLog(r io.Reader, logFile *os.File, listening chan<- string) {
	defer func() {
		_ = n.cmd.Wait()
		logFile.Close()
		close(n.done)
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		_, _ = logFile.Write(append(line, '\n'))
		var rec struct{ Msg, Addr string }
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "jobd serving" {
			select {
			case listening <- rec.Addr:
			default:
			}
		}
	}
}

// stop ends the node (SIGTERM, then SIGKILL) and waits for it.
func (n *node) stop() {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
}

func (n *node) logTail() string {
	b, _ := os.ReadFile(n.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// warmUp makes the node start what it starts once (its engine's
// goroutines, its store's first connections) before a case measures it:
// a read of each kind the cases make, then samples until the goroutines
// hold still for three in a row (or a deadline passes: the bounds' slack
// covers the rest).
func (n *node) warmUp(t *testing.T) {
	t.Helper()
	for _, path := range []string{"/status", "/api/v1/jobs?limit=1", "/api/v1/queues"} {
		req, _ := http.NewRequest("GET", n.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+n.secret)
		resp, err := n.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	last, same := -1, 0
	for deadline := time.Now().Add(30 * time.Second); same < 3 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		g := n.sample(t).goroutines
		if g == last {
			same++
		} else {
			last, same = g, 1
		}
	}
}

// sample is what the node holds at one moment.
type sample struct {
	rssKiB     int64 // VmRSS
	fds        int   // entries of /proc/PID/fd
	goroutines int   // go_goroutines of its /metrics
	poolMax    int   // the most connections its store's pools open
	streams    int   // jobd_sse_subscribers
}

func (s sample) String() string {
	return fmt.Sprintf("RSS %.1f MiB, %d fds, %d goroutines", float64(s.rssKiB)/1024, s.fds, s.goroutines)
}

// sample reads the node's figures now.
func (n *node) sample(t *testing.T) sample {
	t.Helper()
	s := sample{rssKiB: n.status(t, "VmRSS"), fds: n.fds(t)}
	m := n.metrics(t)
	s.goroutines, s.poolMax, s.streams = int(m["go_goroutines"]), int(m["jobd_db_pool_max_connections"]), int(m["jobd_sse_subscribers"])
	return s
}

// status reads a field of /proc/PID/status, in KiB.
func (n *node) status(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the node's status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, v)
			}
			return kib
		}
	}
	t.Fatalf("no %s in the node's status", field)
	return 0
}

// resetPeak resets the node's peak resident memory (VmHWM) to what it
// holds now (/proc/PID/clear_refs, 5).
func (n *node) resetPeak(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", n.cmd.Process.Pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset the node's peak memory: %v", err)
	}
}

// peakKiB is the node's peak resident memory since resetPeak.
func (n *node) peakKiB(t *testing.T) int64 { return n.status(t, "VmHWM") }

func (n *node) fds(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", n.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the node's fds: %v", err)
	}
	return len(entries)
}

// metrics reads the node's /metrics: each sample's value by its name
// and labels as written, and summed over its labels by its name alone.
func (n *node) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", n.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+n.secret)
	resp, err := n.http.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ') // label values may hold spaces
		if i < 0 {
			continue
		}
		name, value := line[:i], line[i+1:]
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		out[name] = v
		if bare, _, labelled := strings.Cut(name, "{"); labelled {
			out[bare] += v
		}
	}
	return out
}

// answered is how many requests of route (a pattern such as
// "GET /api/v1/jobs") the node has answered, whatever their status: its
// count once each handler returned.
func (n *node) answered(t *testing.T, route string) int {
	t.Helper()
	total := 0.0
	for name, v := range n.metrics(t) {
		if strings.HasPrefix(name, "jobd_http_requests_total{") && strings.Contains(name, `route="`+route+`"`) {
			total += v
		}
	}
	return int(total)
}

// waitFor polls cond until it holds, failing the test after within (a
// deadline on a state, not a measure of speed).
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// request is a raw HTTP/1.1 request to the node with the admin secret.
func (n *node) request(method, path, auth string, header ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, n.addr)
	if auth != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", auth)
	}
	for _, h := range header {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// settle is the deadline of the waits for the node to let go of what a
// case held: its timeouts are seconds, this is generous for a loaded
// machine. JOBD_RESOURCES_SETTLE shortens it (for a binary that never
// lets go).
func settle(t *testing.T) time.Duration {
	if v := os.Getenv("JOBD_RESOURCES_SETTLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("JOBD_RESOURCES_SETTLE: %v", err)
		}
		return d
	}
	return 90 * time.Second
}
