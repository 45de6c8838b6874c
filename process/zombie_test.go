package process_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

// Environment of the node subprocess of TestZombie.
const (
	helperDriver = "JOBD_PROCESS_TEST_HELPER_DRIVER"
	helperDSN    = "JOBD_PROCESS_TEST_HELPER_DSN"
	helperURL    = "JOBD_PROCESS_TEST_HELPER_URL"
)

// zombieLease is the task lease of TestZombie: short, so that the dead
// node's task is rescued within seconds.
const zombieLease = time.Second

// openAt opens the store of driver at dsn, migrating it when migrate.
func openAt(t *testing.T, driver, dsn string, migrate bool) store.Store {
	t.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		err error
	)
	switch driver {
	case "sqlite":
		st, err = sqlite.Open(ctx, dsn, sqlite.Options{})
	case "postgres":
		st, err = postgres.Open(ctx, dsn, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
	default:
		t.Fatalf("unknown driver %q", driver)
	}
	if err != nil {
		t.Fatalf("open %s: %v", driver, err)
	}
	t.Cleanup(func() { st.Close() })
	if migrate {
		if err := st.Migrate(ctx); err != nil {
			t.Fatalf("migrate %s: %v", driver, err)
		}
	}
	return storewatch.Wrap(st)
}

// startNode runs an engine with a process runner of namespace "z" calling
// the HTTP processor at url, until the test ends.
func startNode(t *testing.T, st store.Store, node, url string) *process.Runner {
	t.Helper()
	e, err := engine.New(engine.Config{
		Store: st, Node: node,
		Queues:         []engine.QueueConfig{{Queue: process.DefaultQueue, Concurrency: 2}},
		ReaperInterval: 100 * time.Millisecond,
		Logger:         slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := process.New(st, e, "", []process.Namespace{{
		Name: "z", Processor: &process.HTTPProcessor{URL: url}, LeaseTTL: zombieLease,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// TestHelperProcessNode is not a test: it is the node that TestZombie runs
// in a subprocess and kills mid-call. It skips unless helperDriver is set.
func TestHelperProcessNode(t *testing.T) {
	driver := os.Getenv(helperDriver)
	if driver == "" {
		t.Skip("the helper node of TestZombie, run by it in a subprocess")
	}
	// Each write is passed on to the parent, on the pipe it gave as file
	// 3, so that it waits for this process's writes like for its own.
	parent := os.NewFile(3, "parent")
	st := storewatch.WrapNotify(openAt(t, driver, os.Getenv(helperDSN), false), func() { _, _ = parent.Write([]byte{1}) })
	startNode(t, st, "doomed", os.Getenv(helperURL))
	// The parent kills this process; the timer only guards against an
	// orphan.
	<-time.After(time.Minute)
}

// TestZombie: a node is killed with SIGKILL while its processor call is
// in flight; once the task's lease expires, another node rescues the task
// and, instead of calling the processor again, puts the process in error
// with detail "zombie detected".
func TestZombie(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var dsn string
			if driver == "postgres" {
				dsn = migrated.NewDatabase(t)
			} else {
				dsn = filepath.Join(t.TempDir(), "jobd.db")
			}
			st := openAt(t, driver, dsn, true)

			// The processor counts its calls; a call with {"block": true}
			// signals started and hangs until its caller goes away.
			var inits, calls atomic.Int32
			started := make(chan struct{}, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var req process.Request
				if err := json.Unmarshal(body, &req); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				if req.Task == process.TaskInit {
					inits.Add(1)
					_, _ = w.Write([]byte(`{"aux_state": {"n": 0}}`))
					return
				}
				calls.Add(1)
				var args struct{ Block bool }
				_ = json.Unmarshal(req.Args, &args)
				if args.Block {
					started <- struct{}{}
					<-r.Context().Done()
					return
				}
				_, _ = w.Write([]byte(`{"aux_state": {"n": 1}}`))
			}))
			t.Cleanup(srv.Close)

			var out bytes.Buffer
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessNode$", "-test.v")
			cmd.Env = append(os.Environ(), helperDriver+"="+driver, helperDSN+"="+dsn, helperURL+"="+srv.URL)
			cmd.Stdout, cmd.Stderr = &out, &out
			wrote, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.ExtraFiles = []*os.File{w}
			err = cmd.Start()
			w.Close()
			if err != nil {
				t.Fatalf("start node: %v", err)
			}
			// The node's writes wake this test's waits on st.
			go func() {
				defer wrote.Close()
				buf := make([]byte, 512)
				for {
					n, err := wrote.Read(buf)
					if n > 0 {
						storewatch.Of(st).Wrote()
					}
					if err != nil {
						return
					}
				}
			}()
			exited := false
			t.Cleanup(func() {
				if !exited {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
				if t.Failed() {
					t.Logf("node output:\n%s", out.String())
				}
			})

			// A runner with no engine only submits.
			sub, err := process.New(st, nil, "", []process.Namespace{{Name: "z", Processor: &process.HTTPProcessor{URL: srv.URL}, LeaseTTL: zombieLease}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ij, err := sub.Submit(ctx, "z", "p", process.TaskInit, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if j := wait(t, st, ij.ID); j.State != job.StateSucceeded {
				t.Fatalf("init %s: %s", j.State, j.LastError)
			}
			cj, err := sub.Submit(ctx, "z", "p", process.TaskCall, json.RawMessage(`{"block": true}`), "")
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("the call never reached the processor")
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill node: %v", err)
			}
			_ = cmd.Wait()
			exited = true

			startNode(t, st, "survivor", srv.URL)
			j := wait(t, st, cj.ID)
			if _, err := process.Outcome(j); !errors.Is(err, process.ErrZombie) {
				t.Errorf("task %s attempt %d: outcome %v, want %v", j.State, j.Attempt, err, process.ErrZombie)
			}
			p, err := st.ProcessGet(ctx, "z", "p", store.HistoryPage{After: -1, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != store.ProcessError || p.Detail != "zombie detected" {
				t.Errorf("process %s %q, want error \"zombie detected\"", p.Status, p.Detail)
			}
			if !jsonEq(p.AuxState, `{"n": 0}`) {
				t.Errorf("aux_state %s, want the state before the lost call", p.AuxState)
			}
			if n, m := inits.Load(), calls.Load(); n != 1 || m != 1 {
				t.Errorf("processor saw %d inits and %d calls, want 1 and 1 (the lost call never re-run)", n, m)
			}
		})
	}
}
