package pgtest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// Cluster is a throwaway PostgreSQL cluster of one test's own, for a test
// that stops and starts its server (a database outage) without touching
// the cluster the other tests share. It is removed when the test ends.
type Cluster struct {
	c *cluster
}

// NewCluster starts a cluster for t from the machine's binaries (initdb
// into a temporary directory, a free loopback port), even when
// JOBD_TEST_DATABASE_URL names a server: an outage must not be the shared
// server's. settings are server settings as "name=value" (no spaces),
// beyond or instead of the throwaway clusters' own (max_connections=300,
// fsync, synchronous_commit and full_page_writes off). t fails when none
// can be had.
func NewCluster(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	c, err := startCluster(settings...)
	if err != nil {
		t.Fatalf("pgtest: a PostgreSQL cluster of the test's own is required: %v", err)
	}
	t.Cleanup(c.stop)
	// What committed must survive Stop: the server's
	// synchronous_commit=off (its command line's, which a role's setting
	// overrides in the sessions it starts) would lose the last commits to
	// an immediate stop.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exec1(ctx, c.url, "ALTER ROLE postgres SET synchronous_commit = on"); err != nil {
		t.Fatalf("pgtest: synchronous_commit: %v", err)
	}
	return &Cluster{c: c}
}

// URL is the URL of the cluster's postgres database, as its superuser.
func (cl *Cluster) URL() string { return cl.c.url }

// Stop stops the server at once, as a crash would (pg_ctl stop -m
// immediate): open connections are cut, new ones are refused.
func (cl *Cluster) Stop(t testing.TB) {
	t.Helper()
	if err := cl.stopNow(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

func (cl *Cluster) stopNow() error {
	out, err := cl.c.run("pg_ctl", "-D", filepath.Join(cl.c.dir, "data"), "-m", "immediate", "-w", "stop")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Start starts the stopped server again, on the same port, and waits
// until it accepts connections (after its crash recovery).
func (cl *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := cl.c.start(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// Restart does what pg_ctl restart -m immediate does: the server stops
// at once, as a crash would, and starts again on the same port; Restart
// returns once it accepts connections (after its crash recovery). It
// returns its error instead of failing the test, so that a goroutine of
// the test may call it (a fault injector's).
func (cl *Cluster) Restart() error {
	if err := cl.stopNow(); err != nil {
		return err
	}
	return cl.c.start()
}
