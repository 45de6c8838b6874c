package cli

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

// scheduleNodeEnv carries the arguments of TestHelperScheduleNode's jobd
// serve, separated by \x1f.
const scheduleNodeEnv = "JOBD_TEST_SCHEDULE_NODE_ARGS"

// TestHelperScheduleNode is not a test: TestSchedulesNodesKilled runs the
// test binary as a jobd serve node with it. Each write of the node's
// store is passed on to the parent, on the pipe it gave as file 3, so
// that the parent waits for the node's writes like for its own.
func TestHelperScheduleNode(t *testing.T) {
	args := os.Getenv(scheduleNodeEnv)
	if args == "" {
		t.Skip("helper process only")
	}
	parent := os.NewFile(3, "parent")
	env := &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		wrapStore: func(s store.Store) store.Store {
			return storewatch.WrapNotify(s, func() { _, _ = parent.Write([]byte{1}) })
		}}
	os.Exit(Main(context.Background(), strings.Split(args, "\x1f"), env))
}

// TestSchedulesNodesKilled: a schedule of "@every 1s" on three jobd serve
// nodes whose maintenance leader is killed (SIGKILL) again and again, a
// new node started each time, yields exactly one job per tick over 20
// ticks and more: no tick twice (the tick's idempotency key and the
// fenced advance), none missed (catch_up all runs the ticks that fell
// while no node led).
func TestSchedulesNodesKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s of ticks under SIGKILLed jobd serve subprocesses")
	}
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var dsn, database string
			if driver == "postgres" {
				dsn = migrated.NewDatabase(t)
				database = dsn
			} else {
				dsn = filepath.Join(t.TempDir(), "jobd.db")
				database = "sqlite:" + dsn
			}
			st, err := openStore(t.Context(), database, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if err := st.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			watched := storewatch.Wrap(st)
			c := &cluster{t: t, watched: watched, database: database, leader: leaderReader(t, driver, dsn)}
			for range 3 {
				c.start()
			}
			ticks := func() int64 {
				res, err := st.JobList(context.Background(), store.ListParams{Queue: "sched", Limit: 0})
				if err != nil {
					t.Fatal(err)
				}
				return res.Total
			}
			want := int64(3)
			watched.Until(t, "the first ticks", func() bool { return ticks() >= want })
			for round := range 3 {
				var leader string
				watched.Until(t, "a live leader", func() bool {
					leader = c.leader()
					return c.alive(leader)
				})
				c.kill(leader)
				c.start()
				want = ticks() + 6
				watched.Until(t, fmt.Sprintf("6 more ticks after killing leader %s (round %d)", leader, round+1), func() bool { return ticks() >= want })
			}
			c.killAll()

			res, err := st.JobList(context.Background(), store.ListParams{Queue: "sched", OldestFirst: true, Limit: 10000})
			if err != nil {
				t.Fatal(err)
			}
			var at []time.Time
			for _, j := range res.Jobs {
				if j.Schedule != "tick" || j.ScheduledFor == nil || j.IdempotencyKey != schedule.TickKey("tick", *j.ScheduledFor) {
					t.Fatalf("job %s: schedule %q, scheduled for %v, key %q", j.ID, j.Schedule, j.ScheduledFor, j.IdempotencyKey)
				}
				at = append(at, *j.ScheduledFor)
			}
			slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
			if len(at) < 20 {
				t.Fatalf("%d ticks, want 20 or more", len(at))
			}
			for i := 1; i < len(at); i++ {
				if d := at[i].Sub(at[i-1]); d != time.Second {
					t.Fatalf("ticks %s and %s are %s apart, want 1s: a tick twice or missed (all: %v)", at[i-1], at[i], d, at)
				}
			}
		})
	}
}

// cluster is the jobd serve nodes of TestSchedulesNodesKilled.
type cluster struct {
	t        *testing.T
	watched  *storewatch.Store
	database string
	leader   func() string

	mu    sync.Mutex
	next  int
	nodes map[string]func() // a live node's kill
}

// scheduleConfig is the nodes' --schedules: one job per second in queue
// "sched", which no node works.
const scheduleConfig = `[{"name":"tick","cron":"@every 1s","catch_up":"all","job":{"kind":"noop","queue":"sched"}}]`

// start starts one more node, named n1, n2…
func (c *cluster) start() {
	t := c.t
	c.mu.Lock()
	c.next++
	name := fmt.Sprintf("n%d", c.next)
	c.mu.Unlock()
	wrote, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperScheduleNode$")
	cmd.Env = append(os.Environ(), scheduleNodeEnv+"="+strings.Join([]string{
		"serve", "--database", c.database, "--listen", "127.0.0.1:0", "--node", name,
		"--reaper-interval", "1s", "--workers", "[]", "--schedules", scheduleConfig, "--log-level", "warn",
	}, "\x1f"))
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		wrote.Close()
		t.Fatalf("start node %s: %v", name, err)
	}
	go func() {
		defer wrote.Close()
		buf := make([]byte, 512)
		for {
			n, err := wrote.Read(buf)
			if n > 0 {
				c.watched.Wrote()
			}
			if err != nil {
				return // the node is gone
			}
		}
	}()
	var once sync.Once
	kill := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(func() {
		kill()
		if t.Failed() {
			t.Logf("node %s output:\n%s", name, out.String())
		}
	})
	c.mu.Lock()
	if c.nodes == nil {
		c.nodes = map[string]func(){}
	}
	c.nodes[name] = kill
	c.mu.Unlock()
}

func (c *cluster) alive(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.nodes[name]
	return ok
}

// kill kills a node with SIGKILL.
func (c *cluster) kill(name string) {
	c.mu.Lock()
	kill := c.nodes[name]
	delete(c.nodes, name)
	c.mu.Unlock()
	kill()
}

func (c *cluster) killAll() {
	c.mu.Lock()
	names := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		names = append(names, n)
	}
	c.mu.Unlock()
	for _, n := range names {
		c.kill(n)
	}
}

// leaderReader returns a func that reads which node holds an unexpired
// term of the maintenance election ("" for none), straight from the
// database: no store call reads it without taking part in the election.
func leaderReader(t *testing.T, driver, dsn string) func() string {
	t.Helper()
	if driver == "postgres" {
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return func() string {
			var node string
			err := conn.QueryRow(context.Background(), `SELECT node FROM jobd_leaders WHERE name = $1 AND expires_at > now()`,
				engine.Election).Scan(&node)
			if err != nil && err != pgx.ErrNoRows {
				t.Fatal(err)
			}
			return node
		}
	}
	db, err := sql.Open("sqlite", "file:"+dsn+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return func() string {
		var node string
		err := db.QueryRow(`SELECT node FROM jobd_leaders WHERE name = ? AND expires_at > ?`,
			engine.Election, time.Now().UnixMicro()).Scan(&node)
		if err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		return node
	}
}
