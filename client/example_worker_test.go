package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// A remote worker: claim "resize" jobs of queue "images" over HTTP with a
// worker's key, report progress, resume from a checkpoint, and stop
// gracefully when its context ends.
func ExampleNewWorker() {
	jobd := startJobd()
	defer jobd.Close()
	ctx := context.Background()
	admin, _ := client.New(jobd.URL, "") // the admin secret, or "" for an open server
	reg, err := admin.CreateWorker(ctx, api.WorkerRequest{Name: "gpu-1", Capabilities: []string{"gpu"}})
	if err != nil {
		fmt.Println(err)
		return
	}

	c, _ := client.New(jobd.URL, reg.APIKey) // the worker's own key
	w := client.NewWorker(c, client.WorkerConfig{Queues: []string{"images"}, Concurrency: 4})
	type args struct{ Files []string }
	client.Handle(w, "resize", func(ctx context.Context, t *client.Task[args]) (int, error) {
		var next int // the first file not done yet, on a retry
		if _, err := t.Checkpoint(&next); err != nil {
			return 0, err
		}
		for i := next; i < len(t.Args.Files); i++ {
			// ... resize t.Args.Files[i], honouring ctx ...
			if err := t.SaveCheckpoint(ctx, i+1); err != nil {
				return 0, err
			}
			_ = t.SetProgress(ctx, int64(i+1), int64(len(t.Args.Files)), "resize")
		}
		return len(t.Args.Files), nil
	})
	// In a program, the context comes from
	// signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt).
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(runCtx) }()

	j, _, err := admin.Submit(ctx, api.SubmitRequest{Queue: "images", Kind: "resize",
		Args: json.RawMessage(`{"files":["a.png","b.png","c.png"]}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	final, err := admin.Wait(waitCtx, j.ID, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(final.State, string(final.Result), final.Progress.Done, "of", final.Progress.Total)
	stop()
	fmt.Println("worker stopped:", <-stopped)
	// Output:
	// succeeded 3 3 of 3
	// worker stopped: <nil>
}
