package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/internal/testutil/pgtest"
)

// The PostgreSQL side: the nodes connect as role jobd, which is no
// superuser, to database jobd, so that connection exhaustion bites them
// as it would in production (the slots superuser_reserved_connections
// keeps are not theirs), while the harness's fault injector and checks
// connect as the superuser to database postgres.
const (
	nodeRole     = "jobd"
	nodeDatabase = "jobd"
)

// setupDatabase makes the nodes' role and database on the cluster and
// returns their URL. What a node commits must survive an immediate
// restart: the throwaway cluster runs with synchronous_commit off, which
// the role turns on in its sessions.
func setupDatabase(t *testing.T, cl *pgtest.Cluster) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		"CREATE ROLE " + nodeRole + " LOGIN",
		"ALTER ROLE " + nodeRole + " SET synchronous_commit = on",
		"CREATE DATABASE " + nodeDatabase + " OWNER " + nodeRole,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	u, err := url.Parse(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User, u.Path = url.User(nodeRole), "/"+nodeDatabase
	return u.String()
}

// freeAddr returns a loopback address nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// node is one `jobd serve`, restarted on the same address whenever the
// harness killed it.
type node struct {
	h    *harness
	name string
	addr string
	log  string

	mu   sync.Mutex
	proc *process
	// up: the current process served /health and was not killed since.
	up bool
	// starts counts the processes started; failedStarts those that
	// exited before they served (the database could not be reached);
	// crashes describes those that exited by themselves after serving.
	starts, failedStarts int
	crashes              []string
}

// serveArgs are a node's flags: short intervals, so that leases expire
// and are rescued within seconds; an in-process pool on the inproc queue
// (the remote queues have no pool: their jobs are the workers').
func (n *node) serveArgs() []string {
	return []string{"serve",
		"--database", n.h.dbURL,
		"--listen", n.addr,
		"--admin-secret", adminSecret,
		"--workers", `[{"queue":"` + queueInproc + `","concurrency":4,"backoff":{"kind":"linear","step":"200ms"}}]`,
		"--reaper-interval", reaperInterval.String(),
		"--heartbeat-interval", nodeHeartbeat.String(),
		"--poll-interval", "1s",
		"--shutdown-timeout", "5s",
	}
}

// start starts the node and waits until it serves, starting it again
// while it exits first (its database cannot be reached), until ctx ends.
func (n *node) start(ctx context.Context) error {
	for {
		p, err := startProcess(n.h.jobd, n.serveArgs(), n.log)
		if err != nil {
			return err
		}
		n.h.procs.add(p)
		n.mu.Lock()
		n.proc, n.starts = p, n.starts+1
		n.mu.Unlock()
		if n.waitServing(ctx, p) {
			n.mu.Lock()
			n.up = true
			n.mu.Unlock()
			go n.watch(p)
			return nil
		}
		if ctx.Err() != nil {
			p.kill()
			return fmt.Errorf("node %s: not serving: %w", n.name, ctx.Err())
		}
		n.mu.Lock()
		n.failedStarts++
		n.mu.Unlock()
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("node %s: not serving: %w", n.name, ctx.Err())
		}
	}
}

// waitServing polls the node's /health until it answers 200 (true) or
// the process exits (false).
func (n *node) waitServing(ctx context.Context, p *process) bool {
	hc := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return false
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		resp, err := hc.Get("http://" + n.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
	}
}

// watch records a crash: the process exiting though the harness did
// not signal it. The node is started again, as a supervisor would.
func (n *node) watch(p *process) {
	<-p.done
	if p.signalled.Load() {
		return
	}
	n.mu.Lock()
	n.up = false
	n.crashes = append(n.crashes, fmt.Sprintf("%s exited by itself (%v); its log ends:\n%s", n.name, p.err, tail(n.log, 30)))
	n.mu.Unlock()
	_ = n.start(n.h.ctx)
}

// isUp reports whether the node serves (as far as the harness knows).
func (n *node) isUp() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.up
}

// kill SIGKILLs the node's process and waits for it to exit.
func (n *node) kill() {
	n.mu.Lock()
	p := n.proc
	n.up = false
	n.mu.Unlock()
	p.kill()
}

// stop stops the node gracefully (SIGTERM), as at the end of the run.
func (n *node) stop() error {
	n.mu.Lock()
	p := n.proc
	n.up = false
	n.mu.Unlock()
	stopped, err := p.stop(30 * time.Second)
	if !stopped || err != nil {
		return fmt.Errorf("node %s at shutdown: %v; its log ends:\n%s", n.name, err, tail(n.log, 30))
	}
	return nil
}

// newNode names a node and gives it an address and a log file.
func newNode(h *harness, i int) *node {
	name := fmt.Sprintf("n%d", i+1)
	return &node{h: h, name: name, addr: freeAddr(h.t), log: filepath.Join(h.dir, name+".log")}
}
