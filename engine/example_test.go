package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/sqlite"
)

func ExampleParseQueues() {
	qs, err := engine.ParseQueues([]byte(`[{"queue":"default","concurrency":4},
		{"queue":"loads","concurrency":1,"backoff":{"kind":"linear","step":"30s","jitter":0}}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, q := range qs {
		fmt.Printf("%s: %d at once\n", q.Queue, q.Concurrency)
	}
	// The default backoff is exponential with jitter; this one is plain.
	fmt.Println("loads waits", qs[1].Backoff.Delay(3, nil), "after the third attempt")
	_, err = engine.ParseQueues([]byte(`[{"queue":"default","concurrency":0}]`))
	fmt.Println(err)
	// Output:
	// default: 4 at once
	// loads: 1 at once
	// loads waits 1m30s after the third attempt
	// invalid queues[0].concurrency: must be between 1 and 10000, got 0
}

type resizeArgs struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

func ExampleRegister() {
	dir, _ := os.MkdirTemp("", "jobd-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "jobd.db"), sqlite.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}

	e, err := engine.New(engine.Config{
		Store:  st,
		Queues: []engine.QueueConfig{{Queue: "default", Concurrency: 2}},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	resized := make(chan struct{})
	engine.Register(e, "resize", func(ctx context.Context, j *engine.Job[resizeArgs]) (string, error) {
		defer close(resized)
		j.SetProgress(job.Progress{Phase: "resizing", Done: 1, Total: 1})
		return fmt.Sprintf("%s at %dpx", j.Args.Image, j.Args.Width), nil
	})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()

	res, err := e.Insert(ctx, job.InsertParams{Kind: "resize", Args: json.RawMessage(`{"image":"cat.png","width":320}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	<-resized
	// A graceful stop writes the outcomes of the jobs that ran.
	stop()
	runErr := <-done
	j, err := st.JobGet(ctx, res.Job.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(j.State, string(j.Result))
	fmt.Println("Run:", runErr)
	// Output:
	// succeeded "cat.png at 320px"
	// Run: <nil>
}

// ExampleEngine_InsertTx writes an order into the application's own table
// and the job that ships it in one SQLite transaction: both, or neither.
// (On PostgreSQL, postgres.(*Store).WithTx makes the Executor of a pgx.Tx
// the application began.)
func ExampleEngine_InsertTx() {
	dir, _ := os.MkdirTemp("", "jobd-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "jobd.db"), sqlite.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	e, err := engine.New(engine.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}

	order := func(id int) error {
		return st.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
			tx, _ := sqlite.TxOf(ex) // the store's write transaction
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)`); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES (?)`, id); err != nil {
				return err // a duplicate order: no job either
			}
			_, err := e.InsertTx(ctx, ex, job.InsertParams{Kind: "ship", Args: json.RawMessage(fmt.Sprintf(`{"order":%d}`, id))})
			return err
		})
	}
	fmt.Println("order 42:", order(42) == nil)
	fmt.Println("order 42 again:", order(42) == nil)
	list, err := st.JobList(ctx, store.ListParams{Kind: "ship"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ship jobs:", list.Total)
	// Output:
	// order 42: true
	// order 42 again: false
	// ship jobs: 1
}
