package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// Submit a job, once: the same idempotency key answers with the job it
// first created.
func ExampleClient_Submit() {
	jobd := startJobd() // a jobd for the example; yours is at http://host:8080
	defer jobd.Close()
	ctx := context.Background()
	c, err := client.New(jobd.URL, "") // an API key, or "" for an open server
	if err != nil {
		fmt.Println(err)
		return
	}
	req := api.SubmitRequest{Kind: "noop", Args: json.RawMessage(`{"image":"cat.png"}`), IdempotencyKey: "resize-cat"}
	j, created, err := c.Submit(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", created, j.Kind, j.Queue)
	again, created, err := c.Submit(ctx, req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", created, "same job:", again.ID == j.ID)
	// Output:
	// created: true noop default
	// created: false same job: true
}

// Wait for a job to be final, following its progress.
func ExampleClient_Wait() {
	jobd := startJobd()
	defer jobd.Close()
	ctx := context.Background()
	c, _ := client.New(jobd.URL, "")
	j, _, err := c.Submit(ctx, api.SubmitRequest{Kind: "sleep", Args: json.RawMessage(`{"ms":20,"steps":2,"result":{"done":true}}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	final, err := c.Wait(ctx, j.ID, func(j api.Job) {
		// Called with the job as it is, then on each change of its state
		// or progress: j.Progress.Done of j.Progress.Total.
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(final.State, string(final.Result))
	// Output:
	// succeeded {"done":true}
}

// A durable process: create it, call it (safely retried with an
// idempotency key), read its history, remove it. The server runs the
// namespace "counters" (jobd serve --processors), whose processor keeps
// {"n": N} and adds args.by on each call.
func ExampleClient_CallProcess() {
	jobd := startJobd()
	defer jobd.Close()
	ctx := context.Background()
	c, _ := client.New(jobd.URL, "")
	if _, err := c.InitProcess(ctx, "counters", "visits", nil, client.TaskOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	call := client.TaskOptions{Timeout: 10 * time.Second, IdempotencyKey: "visit-1"}
	ans, err := c.CallProcess(ctx, "counters", "visits", json.RawMessage(`{"by":5}`), call)
	var pending *client.TaskTimeoutError
	switch {
	case errors.As(err, &pending):
		// Still running after 10s: it is not lost. Wait for pending.TaskID,
		// or send the call again with the same key.
		fmt.Println("pending:", pending.TaskID)
		return
	case err != nil:
		fmt.Println(err)
		return
	}
	fmt.Println(string(ans.Response), ans.Process.Status)
	again, _ := c.CallProcess(ctx, "counters", "visits", json.RawMessage(`{"by":5}`), call)
	fmt.Println("the same task:", again.TaskID == ans.TaskID)

	p, err := c.GetProcess(ctx, "counters", "visits", client.HistoryOptions{Limit: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range p.History {
		fmt.Println(e.EventID, string(e.Payload))
	}
	_, err = c.InitProcess(ctx, "counters", "visits", nil, client.TaskOptions{})
	fmt.Println("init again:", errors.Is(err, client.ErrConflict))
	fmt.Println("delete:", c.DeleteProcess(ctx, "counters", "visits"))
	// Output:
	// {"n":5} running
	// the same task: true
	// 1 {"task":"init","n":0}
	// 2 {"task":"call","n":5}
	// init again: true
	// delete: <nil>
}

// Errors are classified by the server's problem type: errors.Is with a
// sentinel, and IsRetryable for whether to send the request again later.
func ExampleIsRetryable() {
	jobd := startJobd()
	defer jobd.Close()
	c, _ := client.New(jobd.URL, "")
	_, err := c.CallProcess(context.Background(), "counters", "nobody", nil, client.TaskOptions{})
	fmt.Println(errors.Is(err, client.ErrNotFound), client.IsRetryable(err))
	fmt.Println(err)
	// Output:
	// true false
	// jobd: 404 no such process counters/nobody
}
