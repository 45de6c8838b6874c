package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// standbyName is the standby's cluster_name, which its WAL receiver
// reports as its application_name, and which the primary's
// synchronous_standby_names names.
const standbyName = "jobd_standby"

// NewReplicated starts a primary cluster of the test's own and a
// synchronous standby of it, streaming: the standby is a copy of the
// primary (pg_basebackup -R), and the primary commits a transaction only
// once the standby has its WAL on disk (synchronous_commit = on,
// synchronous_standby_names naming it), so that whatever the primary
// acknowledged survives a promotion of the standby. Both are removed when
// the test ends. t fails when they cannot be had.
func NewReplicated(t testing.TB) (primary, standby *Cluster) {
	t.Helper()
	primary = NewCluster(t, "synchronous_commit=on")
	s, err := startStandby(primary.c)
	if err != nil {
		t.Fatalf("pgtest: a standby of the test's own is required: %v", err)
	}
	t.Cleanup(s.stop)
	standby = &Cluster{c: s}
	// Only the primary waits for its standby (ALTER SYSTEM writes the
	// primary's own postgresql.auto.conf, copied before): a promoted
	// standby commits without waiting for one it does not have.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, sql := range []string{"ALTER SYSTEM SET synchronous_standby_names = '" + standbyName + "'", "SELECT pg_reload_conf()"} {
		if err := exec1(ctx, primary.URL(), sql); err != nil {
			t.Fatalf("pgtest: %s: %v", sql, err)
		}
	}
	for {
		var state string
		err := queryRow1(ctx, primary.URL(), "SELECT coalesce((SELECT sync_state FROM pg_stat_replication WHERE application_name = '"+standbyName+"'), '')", &state)
		if err == nil && state == "sync" {
			return primary, standby
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pgtest: the standby never streamed synchronously (state %q, err %v)", state, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startStandby copies primary into a new cluster directory and starts it
// as its standby on a free port.
func startStandby(primary *cluster) (*cluster, error) {
	dir, err := newClusterDir()
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, bin: primary.bin, asUser: primary.asUser}
	if err := c.chown(); err != nil {
		return nil, err
	}
	host, port, err := hostPort(primary.url)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	// initdb's directory may hold links to a few of the server's tools
	// only: pg_basebackup is beside the one it links to.
	if initdb, err := filepath.EvalSymlinks(filepath.Join(c.bin, "initdb")); err == nil {
		c.bin = filepath.Dir(initdb)
	}
	if out, err := c.run("pg_basebackup", "-h", host, "-p", port, "-U", "postgres", "-D", data, "-R", "-X", "stream", "--no-sync"); err != nil {
		return nil, fmt.Errorf("pg_basebackup: %v: %s", err, out)
	}
	p, err := freePort()
	if err != nil {
		return nil, err
	}
	// The primary's command line is not copied: the standby has its own
	// (and synchronous_standby_names is not on it, so that commits do
	// not wait once it is promoted).
	c.opts = strings.Join([]string{
		"-p", strconv.Itoa(p), "-h", "127.0.0.1", "-k", dir,
		"-c", "max_connections=300", "-c", "shared_buffers=128MB",
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "cluster_name=" + standbyName,
	}, " ")
	if err := c.start(); err != nil {
		return nil, err
	}
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p)
	return c, nil
}

// Promote makes the standby a primary (pg_ctl promote) and returns once
// it accepts writes.
func (cl *Cluster) Promote(t testing.TB) {
	t.Helper()
	if out, err := cl.c.run("pg_ctl", "-D", filepath.Join(cl.c.dir, "data"), "-w", "-t", "60", "promote"); err != nil {
		t.Fatalf("pgtest: pg_ctl promote: %v: %s", err, out)
	}
}

// HostPort is the host:port the cluster listens on.
func (cl *Cluster) HostPort() string {
	host, port, _ := hostPort(cl.c.url)
	return host + ":" + port
}

// hostPort reads the host and port of a cluster's URL.
func hostPort(url string) (host, port string, err error) {
	rest := strings.TrimPrefix(url, "postgres://postgres@")
	hp, _, _ := strings.Cut(rest, "/")
	host, port, ok := strings.Cut(hp, ":")
	if !ok {
		return "", "", fmt.Errorf("no port in %q", url)
	}
	return host, port, nil
}

func queryRow1(ctx context.Context, dsn, sql string, dest any) error {
	conn, err := connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dest)
}

func connect(ctx context.Context, dsn string) (*pgx.Conn, error) { return pgx.Connect(ctx, dsn) }

// chown gives the cluster's directory to the user its server runs as,
// when that is another (the postgres user, when running as root).
func (c *cluster) chown() error {
	if c.asUser == "" {
		return nil
	}
	u, err := user.Lookup(c.asUser)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(c.dir, uid, gid)
}
