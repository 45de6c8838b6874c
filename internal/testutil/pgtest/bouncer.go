package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Bouncer is a PgBouncer of one test's own, in front of a PostgreSQL
// server, in transaction pooling mode and otherwise its default
// settings: a client connection gets a server connection for one
// transaction at a time, so that nothing a client leaves in a session
// (a prepared statement, a session lock, a SET, a LISTEN) is still there
// for its next transaction, and PgBouncer refuses the startup parameters
// it does not know. It is stopped when the test ends.
type Bouncer struct {
	addr string
}

// NewBouncer starts PgBouncer (Debian's pgbouncer package: CI installs
// it) on a free loopback port in front of the server of serverURL (a
// cluster's or pgtest's own), for the roles users beside postgres,
// which it lets in without a password. t fails when it cannot: a missing
// pgbouncer fails the test, never skips it.
func NewBouncer(t testing.TB, serverURL string, users ...string) *Bouncer {
	t.Helper()
	bin, err := bouncerBinary()
	if err != nil {
		t.Fatalf("pgtest: PgBouncer is required (apt-get install -y pgbouncer): %v", err)
	}
	host, pgPort, err := hostPort(serverURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// Not t.TempDir: its parent is the test user's own, which PgBouncer,
	// run as postgres, could not read.
	dir, err := os.MkdirTemp("", "jobd-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	var auth strings.Builder
	for _, u := range append([]string{"postgres"}, users...) {
		fmt.Fprintf(&auth, "%q \"\"\n", u)
	}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
`, host, pgPort, port, filepath.Join(dir, "users.txt"))
	for name, text := range map[string]string{"users.txt": auth.String(), "pgbouncer.ini": ini} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	log, err := os.Create(filepath.Join(dir, "pgbouncer.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root.
		cred, err := postgresCredential()
		if err != nil {
			t.Fatalf("pgtest: running PgBouncer as root needs the postgres system user: %v", err)
		}
		cmd.SysProcAttr.Credential = cred
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("pgtest: start pgbouncer: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	b := &Bouncer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, b.URL("postgres", "postgres")+"&default_query_exec_mode=simple_protocol")
		if err == nil {
			conn.Close(ctx)
			return b
		}
		select {
		case <-done:
			out, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Fatalf("pgtest: pgbouncer exited: %s", out)
		case <-ctx.Done():
			t.Fatalf("pgtest: pgbouncer does not answer: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// URL is the URL of database as role through the bouncer.
func (b *Bouncer) URL(role, database string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", role, b.addr, database)
}

// bouncerBinary finds pgbouncer on PATH or where Debian puts it.
func bouncerBinary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", fmt.Errorf("no pgbouncer on PATH or in /usr/sbin")
}

// postgresCredential is the postgres system user's.
func postgresCredential() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
