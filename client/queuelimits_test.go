package client_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// TestQueueLimitsRoundTrip: the SDK creates a key limited to queues and
// with the cancel scope, and a worker limited to queues, and reads both
// back; the limited key submits to and cancels in its queues only, and
// the worker's claim of another queue is ErrForbidden naming queues.
func TestQueueLimitsRoundTrip(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		const secret = "sdk-admin-secret-0123456789"
		admin, url := serve(t, st, httpapi.Config{AdminSecret: secret}, secret, nil)

		k, err := admin.CreateKeyWith(ctx, api.KeyRequest{Name: "video", Scopes: []string{api.ScopeSubmit, api.ScopeCancel}, Queues: []string{"video.*"}})
		if err != nil || !slices.Equal(k.Queues, []string{"video.*"}) || !slices.Equal(k.Scopes, []string{"submit", "cancel"}) {
			t.Fatalf("CreateKeyWith: %+v, %v", k, err)
		}
		keys, err := admin.ListKeys(ctx)
		if err != nil || len(keys) != 1 || !slices.Equal(keys[0].Queues, []string{"video.*"}) {
			t.Fatalf("ListKeys: %+v, %v", keys, err)
		}
		_, err = admin.CreateKeyWith(ctx, api.KeyRequest{Name: "bad", Scopes: []string{api.ScopeAdmin}, Queues: []string{"video.*"}})
		var apiErr *client.Error
		if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &apiErr) || apiErr.Problem.Field != "queues" {
			t.Fatalf("an admin key limited to queues: %v", err)
		}

		limited, err := client.New(url, k.Key)
		if err != nil {
			t.Fatal(err)
		}
		j, _, err := limited.Submit(ctx, api.SubmitRequest{Queue: "video.hd", Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := limited.Cancel(ctx, j.ID); err != nil || got.State != api.StateCanceled {
			t.Fatalf("Cancel with the limited key: %+v, %v", got, err)
		}
		_, _, err = limited.Submit(ctx, api.SubmitRequest{Queue: "audio", Kind: "k"})
		if !errors.Is(err, client.ErrForbidden) || !errors.As(err, &apiErr) || apiErr.Problem.Field != "queue" {
			t.Fatalf("Submit to another queue: %v", err)
		}
		other, _, err := admin.Submit(ctx, api.SubmitRequest{Queue: "audio", Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := limited.Cancel(ctx, other.ID); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("Cancel of another queue's job: %v", err)
		}

		reg, err := admin.CreateWorker(ctx, api.WorkerRequest{Name: "video box", Queues: []string{"video.*", "thumbs"}})
		if err != nil || !slices.Equal(reg.Worker.Queues, []string{"video.*", "thumbs"}) {
			t.Fatalf("CreateWorker: %+v, %v", reg, err)
		}
		ws, err := admin.Workers(ctx)
		if err != nil || len(ws) != 1 || !slices.Equal(ws[0].Queues, []string{"video.*", "thumbs"}) {
			t.Fatalf("Workers: %+v, %v", ws, err)
		}
		worker, err := client.New(url, reg.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		_, err = worker.Claim(ctx, []string{"audio"}, 1, 0)
		if !errors.Is(err, client.ErrForbidden) || !errors.As(err, &apiErr) || apiErr.Problem.Field != "queues" {
			t.Fatalf("Claim of a queue outside the worker's: %v", err)
		}
		if got, err := worker.Claim(ctx, []string{"thumbs"}, 1, 0); err != nil || len(got) != 0 {
			t.Fatalf("Claim of its own empty queue: %+v, %v", got, err)
		}
	})
}
