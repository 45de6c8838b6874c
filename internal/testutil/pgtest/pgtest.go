// Package pgtest gives tests a real PostgreSQL database. Unless
// JOBD_TEST_DATABASE_URL names a server, the first call starts a throwaway
// cluster from the machine's binaries (initdb into a temporary directory,
// a free loopback port) that Main stops when the package's tests end. Each
// call to NewDatabase creates a fresh, empty database, so tests can run in
// parallel without seeing each other's rows; a Template's NewDatabase
// clones a database migrated once per test binary instead (CREATE
// DATABASE … TEMPLATE), which is much cheaper than migrating each one.
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

	// copyStrategy is how CREATE DATABASE copies its template: " STRATEGY
	// FILE_COPY" on the throwaway cluster (PostgreSQL 15+), where the
	// checkpoints it costs are cheap (fsync off) and the copy several
	// times faster than the default's WAL-logged one; the server's
	// default on a server of JOBD_TEST_DATABASE_URL.
	copyStrategy string

	// templates are the template databases made by this process, dropped
	// by Main.
	templatesMu sync.Mutex
	templates   []string
)

// Main runs the package's tests, then drops the template databases and
// stops the throwaway cluster. Use it from TestMain:
// func TestMain(m *testing.M) { pgtest.Main(m) }. Unless the command
// line sets -parallel, the package's parallel tests run four per CPU
// (raiseParallel).
func Main(m *testing.M) {
	raiseParallel()
	code := m.Run()
	dropTemplates()
	if server != nil {
		server.stop()
	}
	os.Exit(code)
}

// NewDatabase creates an empty database for t and returns its URL. The
// database is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "")
}

// newDatabase creates a database for t, a copy of template if one is
// named, and returns its URL; it is dropped when t ends.
func newDatabase(t testing.TB, template string) string {
	t.Helper()
	startOnce.Do(start)
	if startErr != nil {
		t.Fatalf("pgtest: PostgreSQL is required: %v", startErr)
	}
	name := fmt.Sprintf("jobd_test_%d_%d", os.Getpid(), dbSeq.Add(1))
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
	}
	create += copyStrategy
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec1(ctx, adminURL, create); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = exec1(ctx, adminURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return databaseURL(name)
}

func databaseURL(name string) string {
	u, _ := url.Parse(adminURL)
	u.Path = "/" + name
	return u.String()
}

// Template is a database prepared once per test binary, by a function the
// test package gives (typically: migrate the schema), that NewDatabase
// copies. pgtest cannot prepare it itself: it must not import the store
// driver, whose own tests import pgtest.
type Template struct {
	prepare func(ctx context.Context, url string) error

	once sync.Once
	name string
	err  error
}

// NewTemplate returns a Template that prepare fills, on first use, through
// the database's URL. prepare must close every connection it opened
// before it returns: PostgreSQL copies only a database nobody is
// connected to.
func NewTemplate(prepare func(ctx context.Context, url string) error) *Template {
	return &Template{prepare: prepare}
}

// NewDatabase creates a copy of the template for t (preparing the template
// first if need be) and returns its URL. The copy is dropped when t ends.
func (tp *Template) NewDatabase(t testing.TB) string {
	t.Helper()
	startOnce.Do(start)
	if startErr != nil {
		t.Fatalf("pgtest: PostgreSQL is required: %v", startErr)
	}
	tp.once.Do(tp.make)
	if tp.err != nil {
		t.Fatalf("pgtest: template database: %v", tp.err)
	}
	return newDatabase(t, tp.name)
}

// templateTimeout bounds the preparation of a template.
const templateTimeout = 2 * time.Minute

func (tp *Template) make() {
	ctx, cancel := context.WithTimeout(context.Background(), templateTimeout)
	defer cancel()
	name := fmt.Sprintf("jobd_template_%d_%d", os.Getpid(), dbSeq.Add(1))
	if err := exec1(ctx, adminURL, "CREATE DATABASE "+name); err != nil {
		tp.err = err
		return
	}
	templatesMu.Lock()
	templates = append(templates, name)
	templatesMu.Unlock()
	if err := tp.prepare(ctx, databaseURL(name)); err != nil {
		tp.err = fmt.Errorf("prepare: %w", err)
		return
	}
	// Marked as a template, it cannot be connected to by mistake (which
	// would make every copy fail).
	if err := exec1(ctx, adminURL, "ALTER DATABASE "+name+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		tp.err = err
		return
	}
	tp.name = name
}

// dropTemplates drops the template databases this process made (on a
// server of JOBD_TEST_DATABASE_URL; a throwaway cluster goes whole).
func dropTemplates() {
	templatesMu.Lock()
	defer templatesMu.Unlock()
	for _, name := range templates {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = exec1(ctx, adminURL, "ALTER DATABASE "+name+" WITH IS_TEMPLATE false")
		_ = exec1(ctx, adminURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		cancel()
	}
	templates = nil
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
	if startErr != nil {
		return
	}
	adminURL = server.url
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		startErr = err
		return
	}
	defer conn.Close(ctx)
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		startErr = err
		return
	}
	if version >= 150000 {
		copyStrategy = " STRATEGY FILE_COPY"
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

// startCluster makes and starts a cluster; settings ("name=value") are
// server settings beyond (or instead of) the defaults below.
func startCluster(settings ...string) (*cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	asUser := ""
	if os.Geteuid() == 0 {
		asUser = "postgres" // initdb and postgres refuse to run as root
	}
	removeOrphans(bin, asUser)
	dir, err := newClusterDir()
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
		"-c", "max_connections=300", "-c", "shared_buffers=128MB", "-c", "max_wal_size=256MB",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
	}, " ")
	for _, s := range settings {
		c.opts += " -c " + s
	}
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

// memoryDir is where throwaway clusters live when the machine has it: a
// file system in memory. Every test database is a CREATE DATABASE …
// STRATEGY FILE_COPY of a template, and its checkpoints' writeback makes
// that ~300 ms on a VM's ext4 even with fsync off, ~10 ms in memory:
// most of the CPU of the PostgreSQL tests.
const memoryDir = "/dev/shm"

// clusterParents are the directories that hold throwaway clusters.
func clusterParents() []string { return []string{memoryDir, os.TempDir()} }

// newClusterDir makes a throwaway cluster's directory, in memory when it
// can. Its name carries this process's id, so that a later run can tell
// a cluster whose test process was killed (and never stopped it).
func newClusterDir() (string, error) {
	pattern := fmt.Sprintf("%s%d-", dirPrefix, os.Getpid())
	if dir, err := os.MkdirTemp(memoryDir, pattern); err == nil {
		return dir, nil
	}
	return os.MkdirTemp("", pattern)
}

// removeOrphans stops and deletes the clusters left behind by test
// processes that died without stopping them (a timeout, a SIGKILL).
func removeOrphans(bin, asUser string) {
	var dirs []string
	for _, parent := range clusterParents() {
		found, _ := filepath.Glob(filepath.Join(parent, dirPrefix+"*"))
		dirs = append(dirs, found...)
	}
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
