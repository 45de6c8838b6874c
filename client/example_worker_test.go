package client_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/jobd/jobd/client"
)

// A remote worker: claim "resize" jobs over HTTP with a worker's key,
// report progress, resume from a checkpoint, stop gracefully on SIGTERM.
func ExampleNewWorker() {
	c, err := client.New("http://jobd.internal:8080", os.Getenv("JOBD_WORKER_KEY"))
	if err != nil {
		log.Fatal(err)
	}
	w := client.NewWorker(c, client.WorkerConfig{Queues: []string{"images"}, Concurrency: 4})
	type args struct{ Files []string }
	client.Handle(w, "resize", func(ctx context.Context, t *client.Task[args]) (int, error) {
		var next int
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
