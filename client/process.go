package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// The durable process routes (/api/v1/processes/{ns}/{id}): a process is
// a state machine whose processor, configured on the server for its
// namespace, runs one task (init, call, repair, timeout) at a time.

// TaskOptions tunes InitProcess, CallProcess and RepairProcess.
type TaskOptions struct {
	// Timeout is how long the server waits for the task before it answers
	// with a *TaskTimeoutError; 0 means the server's default (30s). The
	// server caps it at 5m.
	Timeout time.Duration
	// IdempotencyKey, when not empty, makes a repeat of the request with
	// the same key wait for the first task and return its outcome instead
	// of running another task: the way to retry a call safely.
	IdempotencyKey string
}

// TaskTimeoutError is the error of a process task that was still queued
// or running when the call's timeout passed (504, type
// api.ProblemTaskTimeout; errors.Is(err, ErrTaskTimeout)). The task is
// not lost: it runs, and Client.Wait(ctx, TaskID, nil) returns its job
// once it is final; or repeat the request with the same
// TaskOptions.IdempotencyKey to get its answer.
type TaskTimeoutError struct {
	// TaskID is the task's job.
	TaskID uuid.UUID
	// State is the task's state when the server answered.
	State api.State
	// Err is the server's answer.
	Err *Error
}

// Error describes the server's answer.
func (e *TaskTimeoutError) Error() string { return e.Err.Error() }

// Unwrap returns the server's answer.
func (e *TaskTimeoutError) Unwrap() error { return e.Err }

// InitProcess creates the process ns/id by running its processor's init
// task with args (nil for none), and returns the processor's response
// and the new process. errors.Is(err, ErrConflict) when the process
// exists, ErrNotFound when the server has no namespace ns, ErrUpstream
// when the processor failed (the process is then in error), and a
// *TaskTimeoutError when the task is not done within opts.Timeout.
func (c *Client) InitProcess(ctx context.Context, ns, id string, args json.RawMessage, opts TaskOptions) (*api.ProcessTaskAnswer, error) {
	return c.processTask(ctx, processPath(ns, id), args, opts)
}

// CallProcess runs a call task of the process ns/id with args: calls of
// one process run one at a time, first come first served. It returns the
// processor's response and the process after the call (nil when the call
// removed it). errors.Is(err, ErrConflict) when the process is in error
// (repair it), ErrNotFound when there is no such process, ErrUpstream
// when the processor failed (the process is now in error), and a
// *TaskTimeoutError when the task is not done within opts.Timeout.
func (c *Client) CallProcess(ctx context.Context, ns, id string, args json.RawMessage, opts TaskOptions) (*api.ProcessTaskAnswer, error) {
	return c.processTask(ctx, processPath(ns, id)+"/call", args, opts)
}

// RepairProcess runs a repair task of the process ns/id, which must be in
// error; when the processor answers, the process is running again.
// errors.Is(err, ErrConflict) when it is not in error.
func (c *Client) RepairProcess(ctx context.Context, ns, id string, args json.RawMessage, opts TaskOptions) (*api.ProcessTaskAnswer, error) {
	return c.processTask(ctx, processPath(ns, id)+"/repair", args, opts)
}

func (c *Client) processTask(ctx context.Context, path string, args json.RawMessage, opts TaskOptions) (*api.ProcessTaskAnswer, error) {
	var q url.Values
	if opts.Timeout > 0 {
		q = url.Values{"timeout": {opts.Timeout.String()}}
	}
	var hdr http.Header
	if opts.IdempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {opts.IdempotencyKey}}
	}
	var out api.ProcessTaskAnswer
	if _, _, err := c.doWith(ctx, http.MethodPost, path, q, hdr, api.ProcessTaskRequest{Args: args}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// HistoryOptions selects the page of history GetProcess returns.
type HistoryOptions struct {
	// After pages forward: the events after this event id, oldest first.
	// Nil: the last Limit events.
	After *int64
	// Limit is the most events returned: 0 means the server's default
	// (100), negative none; at most 1000.
	Limit int
}

// GetProcess returns the process ns/id with a page of its history.
func (c *Client) GetProcess(ctx context.Context, ns, id string, opts HistoryOptions) (*api.Process, error) {
	q := url.Values{}
	if opts.After != nil {
		q.Set("history_after", strconv.FormatInt(*opts.After, 10))
	}
	switch {
	case opts.Limit > 0:
		q.Set("history_limit", strconv.Itoa(opts.Limit))
	case opts.Limit < 0:
		q.Set("history_limit", "0")
	}
	var out api.Process
	if _, _, err := c.do(ctx, http.MethodGet, processPath(ns, id), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ProcessListOptions filters and pages ListProcesses. Zero fields do not
// filter.
type ProcessListOptions struct {
	// Status is api.ProcessRunning or api.ProcessError.
	Status api.ProcessStatus
	// After continues a listing: the Next of the previous page.
	After string
	// Limit is the page size: 0 means the server's default (100); at
	// most 1000.
	Limit int
}

// ListProcesses returns one page of the processes of namespace ns,
// ordered by id, without history; page on with Next. Total counts every
// process that matches.
func (c *Client) ListProcesses(ctx context.Context, ns string, opts ProcessListOptions) (*api.ProcessList, error) {
	q := url.Values{}
	if opts.Status != "" {
		q.Set("status", string(opts.Status))
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var out api.ProcessList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/processes/"+url.PathEscape(ns), q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteProcess removes the process ns/id at once, with its history and
// its pending timer (admin scope).
func (c *Client) DeleteProcess(ctx context.Context, ns, id string) error {
	_, _, err := c.do(ctx, http.MethodDelete, processPath(ns, id), nil, nil, nil)
	return err
}

func processPath(ns, id string) string {
	return fmt.Sprintf("/api/v1/processes/%s/%s", url.PathEscape(ns), url.PathEscape(id))
}
