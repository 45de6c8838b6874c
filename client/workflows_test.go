package client_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// rendition is an encode task's result.
type rendition struct {
	Path   string `json:"path"`
	Height int    `json:"height"`
}

// TestWorkflowSDK: the transcoding workflow built with the SDK's builder
// and submitted (201, then 200 for its idempotency key), run by a
// client.Worker whose handlers read their inputs with client.Input;
// WaitWorkflow sees it through to succeeded, reporting task states on
// the way; ListWorkflows iterates over every page; GetWorkflow,
// RetryWorkflow and CancelWorkflow answer as the server does (409 as
// ErrConflict); a cycle fails as ErrInvalid naming the task's member.
func TestWorkflowSDK(t *testing.T) {
	const secret = "s3cret"
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		admin, url := serve(t, st, httpapi.Config{AdminSecret: secret}, secret, nil)

		wf := client.NewWorkflow("transcode")
		wf.IdempotencyKey = "video-42"
		download := wf.Task("download", api.SubmitRequest{Queue: "media", Kind: "download"})
		var encodes []client.TaskRef
		for _, h := range []string{"720", "1080"} {
			encodes = append(encodes, wf.Task("encode-"+h, api.SubmitRequest{Queue: "media", Kind: "encode",
				Args: []byte(`{"height":` + h + `}`)}, client.DependsOn(download)))
		}
		publish := wf.Task("publish", api.SubmitRequest{Queue: "media", Kind: "publish"}, client.DependsOn(encodes...))
		wf.Task("cleanup", api.SubmitRequest{Queue: "media", Kind: "cleanup"}, client.DependsOn(publish), client.RunOnAny())
		got, created, err := admin.SubmitWorkflow(ctx, wf)
		if err != nil || !created || got.TaskCount != 5 {
			t.Fatalf("submit: %+v, created %v, %v", got, created, err)
		}
		again, created, err := admin.SubmitWorkflow(ctx, wf)
		if err != nil || created || again.ID != got.ID {
			t.Fatalf("submit again: %v, created %v, %v", again, created, err)
		}

		reg, err := admin.CreateWorker(ctx, api.WorkerRequest{Name: "media"})
		if err != nil {
			t.Fatal(err)
		}
		wc, err := client.New(url, reg.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		w := client.NewWorker(wc, client.WorkerConfig{Queues: []string{"media"}, Concurrency: 2, ClaimWait: time.Second})
		client.Handle(w, "download", func(ctx context.Context, t *client.Task[struct{}]) (string, error) {
			return "/src.mov", nil
		})
		client.Handle(w, "encode", func(ctx context.Context, t *client.Task[rendition]) (rendition, error) {
			src, err := client.Input[string](t, "download")
			return rendition{Path: src + "." + t.Job.Ref, Height: t.Args.Height}, err
		})
		var (
			mu        sync.Mutex // published is read after the handler, across the network
			published []rendition
		)
		client.Handle(w, "publish", func(ctx context.Context, t *client.Task[struct{}]) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, ref := range []string{"encode-720", "encode-1080"} {
				r, err := client.Input[rendition](t, ref)
				if err != nil {
					return 0, err
				}
				published = append(published, r)
			}
			if _, err := client.Input[rendition](t, "download"); err == nil {
				return 0, errors.New("publish has an input of download, which it does not depend on")
			}
			return len(published), nil
		})
		client.Handle(w, "cleanup", func(ctx context.Context, t *client.Task[struct{}]) (string, error) {
			return string(t.Job.Inputs["publish"].State), nil
		})
		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = w.Run(runCtx) })
		defer func() { stop(); wg.Wait() }()

		var updates []api.WorkflowState
		final, err := admin.WaitWorkflow(ctx, got.ID, func(wf api.Workflow) { updates = append(updates, wf.State) })
		if err != nil || final.State != api.WorkflowSucceeded || len(updates) == 0 || updates[len(updates)-1] != api.WorkflowSucceeded {
			t.Fatalf("wait: %+v, updates %v, %v", final, updates, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(published) != 2 || published[0] != (rendition{"/src.mov.encode-720", 720}) || published[1].Height != 1080 {
			t.Fatalf("published %+v", published)
		}
		if _, err := admin.RetryWorkflow(ctx, got.ID); !errors.Is(err, client.ErrConflict) {
			t.Fatalf("retry of a succeeded workflow: %v, want ErrConflict", err)
		}

		for _, name := range []string{"b", "c"} {
			one := client.NewWorkflow(name)
			one.Task("t", api.SubmitRequest{Queue: "idle", Kind: "k"})
			if _, _, err := admin.SubmitWorkflow(ctx, one); err != nil {
				t.Fatal(err)
			}
		}
		var names []string
		for wf, err := range admin.ListWorkflows(ctx, client.WorkflowListOptions{Limit: 1}) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, wf.Name)
		}
		if !slices.Equal(names, []string{"c", "b", "transcode"}) {
			t.Fatalf("listed %v", names)
		}
		for wf, err := range admin.ListWorkflows(ctx, client.WorkflowListOptions{Name: "b"}) {
			if err != nil || wf.Name != "b" {
				t.Fatalf("listed %+v, %v", wf, err)
			}
			canceled, err := admin.CancelWorkflow(ctx, wf.ID)
			if err != nil || canceled.State != api.WorkflowCanceled {
				t.Fatalf("cancel: %+v, %v", canceled, err)
			}
		}

		cycle := client.NewWorkflow("cycle")
		a := cycle.Task("a", api.SubmitRequest{Kind: "k"})
		cycle.Task("b", api.SubmitRequest{Kind: "k"}, client.DependsOn(a))
		cycle.Task("a", api.SubmitRequest{Kind: "k"})
		if _, _, err := admin.SubmitWorkflow(ctx, cycle); err == nil {
			t.Fatal("a workflow with two tasks a was submitted")
		}
		loop := client.NewWorkflow("loop")
		loop.Task("a", api.SubmitRequest{Kind: "k"}, client.DependsOn(loop.Task("b", api.SubmitRequest{Kind: "k"})))
		req, _ := loop.Request()
		req.Tasks[0].DependsOn = []string{"a"} // b (added first) → a → b
		var apiErr *client.Error
		if _, _, err := admin.SubmitWorkflowRequest(ctx, req); !errors.Is(err, client.ErrInvalid) || !errors.As(err, &apiErr) || !strings.HasSuffix(apiErr.Problem.Field, "].depends_on") {
			t.Fatalf("a cycle: %v", err)
		}
	})
}
