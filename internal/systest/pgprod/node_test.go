package pgprod

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// node is one `jobd serve` subprocess. The test ends only its own
// processes, by their ids.
type node struct {
	name string
	addr string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startNode starts `jobd serve` as node name with args, its output in
// dir/name.log, and waits until it serves /health; the node is killed
// when t ends.
func startNode(t *testing.T, dir, name string, args ...string) *node {
	t.Helper()
	n, err := launchNode(jobd(t), dir, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.kill)
	if err := n.waitServing(t.Context()); err != nil {
		t.Fatalf("%v; its log ends:\n%s", err, tail(n.log, 30))
	}
	return n
}

// launchNode starts the process, without waiting for it to serve.
func launchNode(bin, dir, name string, args ...string) (*node, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	n := &node{name: name, addr: addr, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logFile, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	n.cmd = exec.Command(bin, append([]string{"serve", "--listen", addr, "--node", name}, args...)...)
	n.cmd.Stdout, n.cmd.Stderr = logFile, logFile
	// Should the test binary die without its cleanups, its nodes die
	// with it.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JOBD_") { // read as flags otherwise
			n.cmd.Env = append(n.cmd.Env, kv)
		}
	}
	if err := n.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		_ = n.cmd.Wait()
		logFile.Close()
		close(n.done)
	}()
	return n, nil
}

// waitServing polls the node's /health until it answers 200, for at most
// two minutes (a -race binary on a loaded machine starts slowly).
func (n *node) waitServing(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	for {
		resp, err := hc.Get("http://" + n.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-n.done:
			return fmt.Errorf("node %s exited before it served", n.name)
		case <-ctx.Done():
			return fmt.Errorf("node %s does not serve: %w", n.name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill ends the node at once (SIGKILL) and waits for it.
func (n *node) kill() {
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

// url is the node's base URL.
func (n *node) url() string { return "http://" + n.addr }

// tail returns the last lines of the file at path, for a failure
// message.
func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// logDir returns a directory for the nodes' logs: kept (and named) when
// the test fails, so that the logs can be read.
func logDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "jobd-pgprod-logs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the nodes' logs are in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}
