// Package pgtest gives tests a real PostgreSQL database. Unless
// JOBD_TEST_DATABASE_URL names a server, the first call starts a throwaway
// cluster from the machine's binaries (initdb into a temporary directory,
// a free loopback port) that Main stops when the package's tests end. Each
// call to NewDatabase creates a fresh, empty database, so tests can run in
// parallel without seeing each other's rows.
//
// A test that needs PostgreSQL fails, never skips, when it cannot have one.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable that points the tests at an existing server.
const EnvURL = "JOBD_TEST_DATABASE_URL"

var (
	startOnce sync.Once
	server    *cluster
	adminURL  string
	startErr  error
	dbSeq     atomic.Int64
)

// Main runs the package's tests and stops the throwaway cluster after
// them. Use it from TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if server != nil {
		server.stop()
	}
	os.Exit(code)
}

// NewDatabase creates an empty database for t and returns its URL. The
// database is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	startOnce.Do(start)
	if startErr != nil {
		t.Fatalf("pgtest: PostgreSQL is required: %v", startErr)
	}
	name := fmt.Sprintf("jobd_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec1(ctx, adminURL, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = exec1(ctx, adminURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, _ := url.Parse(adminURL)
	u.Path = "/" + name
	return u.String()
}

// Server returns the admin URL of the test server (starting it if need
// be), for tests that stop and start it or create databases themselves.
func Server(t testing.TB) string {
	t.Helper()
	startOnce.Do(start)
	if startErr != nil {
		t.Fatalf("pgtest: PostgreSQL is required: %v", startErr)
	}
	return adminURL
}

func exec1(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func start() {
	if u := os.Getenv(EnvURL); u != "" {
		adminURL = u
		return
	}
	server, startErr = startCluster()
	if startErr == nil {
		adminURL = server.url
	}
}

type cluster struct {
	dir    string
	bin    string
	asUser string // non-empty when running as root: the postgres system user
	url    string
	opts   string // the server's options, for pg_ctl start
}

// binDir finds the newest /usr/lib/postgresql/*/bin with initdb.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb on PATH or in /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startCluster() (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	asUser := ""
	if os.Geteuid() == 0 {
		asUser = "postgres" // initdb and postgres refuse to run as root
	}
	removeOrphans(bin, asUser)
	// The directory names this process, so that a later run can tell a
	// cluster whose test process was killed (and never stopped it).
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, bin: bin}
	if asUser != "" {
		// initdb and postgres refuse to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs the postgres system user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		c.asUser = "postgres"
	}
	data := filepath.Join(dir, "data")
	if out, err := c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c.opts = strings.Join([]string{
		"-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir,
		"-c", "max_connections=300", "-c", "shared_buffers=128MB",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
	}, " ")
	if err := c.start(); err != nil {
		return nil, err
	}
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return c, nil
}

// start starts the cluster's server and waits until it accepts
// connections.
func (c *cluster) start() error {
	data := filepath.Join(c.dir, "data")
	if out, err := c.run("pg_ctl", "-D", data, "-l", filepath.Join(c.dir, "log"), "-o", c.opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "log"))
		return fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
	}
	return nil
}

// dirPrefix starts the name of every throwaway cluster's directory.
const dirPrefix = "jobd-pgtest-"

// removeOrphans stops and deletes the clusters left behind by test
// processes that died without stopping them (a timeout, a SIGKILL).
func removeOrphans(bin, asUser string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(dir), dirPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		c := &cluster{dir: dir, bin: bin, asUser: asUser}
		c.stop()
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (c *cluster) run(tool string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	return cmd.CombinedOutput()
}

func (c *cluster) stop() {
	_, _ = c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
	_ = os.RemoveAll(c.dir)
}
