package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// process is one subprocess the harness started: a node or a `jobd
// worker`. The harness ends only its own processes, by their ids.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited
	err  error         // cmd.Wait's, once done
	// signalled: the harness sent it SIGKILL or SIGTERM, so its exit is
	// no crash.
	signalled atomic.Bool
}

// startProcess starts bin with args, its output appended to logPath,
// in an environment without the caller's JOBD_* settings (which the
// binary would read as flags) plus env.
func startProcess(bin string, args []string, logPath string, env ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Should the test binary die without its cleanups (a timeout's
	// panic, a kill), its processes die with it. (Pdeathsig follows the
	// thread that started the process; the Go runtime keeps its threads
	// unless a goroutine locked to one exits, and this one is not.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JOBD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// signal sends sig to the process, unless it exited already.
func (p *process) signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		p.signalled.Store(true)
	}
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// kill ends the process at once and waits for it.
func (p *process) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the process to stop (SIGTERM) and waits up to grace for it,
// then kills it; it reports whether it stopped by itself, and how.
func (p *process) stop(grace time.Duration) (stopped bool, err error) {
	p.signal(syscall.SIGCONT) // a hung one must run to stop
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true, p.err
	case <-time.After(grace):
		p.kill()
		return false, fmt.Errorf("still running %s after SIGTERM: killed", grace)
	}
}

// processes keeps every process the harness started, so that the test's
// end kills those still running.
type processes struct {
	mu  sync.Mutex
	all []*process
}

func (ps *processes) add(p *process) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.all = append(ps.all, p)
}

func (ps *processes) killAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.all {
		p.signal(syscall.SIGCONT)
		p.kill()
	}
}

// tail returns the last n lines of the file at path, for a failure
// message.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// buildJobd builds the jobd binary into dir, with -race when the tests
// run with it.
func buildJobd(t *testing.T, dir string) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build jobd: %v", err)
	}
	bin := filepath.Join(dir, "jobd")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goBin, append(args, "./cmd/jobd")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/jobd: %v\n%s", err, out)
	}
	return bin
}
