package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// CreateWorker registers a remote worker (admin scope). The answer's
// APIKey, of scope worker, is shown only this once. req.Queues limits
// the queues it may claim from (a claim of another is an *Error of
// status 403 whose Problem.Field is "queues"); no worker claims from
// jobd's own queues.
func (c *Client) CreateWorker(ctx context.Context, req api.WorkerRequest) (*api.WorkerCreated, error) {
	var out api.WorkerCreated
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/workers", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Workers lists the remote workers (admin scope).
func (c *Client) Workers(ctx context.Context) ([]api.Worker, error) {
	var out api.WorkerList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/workers", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Workers, nil
}

// DisableWorker disables a worker: its calls get 403, it claims nothing.
func (c *Client) DisableWorker(ctx context.Context, id string) (*api.Worker, error) {
	return c.workerAction(ctx, id, "disable")
}

// EnableWorker enables a disabled worker.
func (c *Client) EnableWorker(ctx context.Context, id string) (*api.Worker, error) {
	return c.workerAction(ctx, id, "enable")
}

func (c *Client) workerAction(ctx context.Context, id, action string) (*api.Worker, error) {
	var out api.Worker
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/workers/"+url.PathEscape(id)+"/"+action, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteWorker deletes a worker and revokes its keys.
func (c *Client) DeleteWorker(ctx context.Context, id string) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/v1/workers/"+url.PathEscape(id), nil, nil, nil)
	return err
}

// The worker protocol, for a client made with a worker's key
// (docs/worker-protocol.md). A call whose lease token is no longer
// current fails with ErrConflict (and ErrLeaseLost). Complete, Fail and
// Release are idempotent: the same outcome sent again with the same
// token, after its answer was lost, answers the job's current state.

// WorkerHeartbeat keeps the worker online (status "active", "idle" or
// "busy") and extends the leases it holds, answering for each whether it
// is still held and whether cancel was requested.
func (c *Client) WorkerHeartbeat(ctx context.Context, status string, leases []api.Lease) ([]api.LeaseState, error) {
	var out api.HeartbeatResponse
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/worker/heartbeat", nil, api.HeartbeatRequest{Status: status, Leases: leases}, &out); err != nil {
		return nil, err
	}
	return out.Leases, nil
}

// Claim claims up to max jobs of queues that the worker can run, waiting
// up to wait (at most a minute) for one to come; none is not an error.
func (c *Client) Claim(ctx context.Context, queues []string, max int, wait time.Duration) ([]api.ClaimedJob, error) {
	var out api.ClaimResponse
	req := api.ClaimRequest{Queues: queues, Max: max, Wait: api.Duration(wait)}
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/worker/claim", nil, req, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// ReportProgress stores a claimed job's progress and extends its lease;
// it reports whether cancel was requested. A NUL in the phase is sent as
// U+FFFD (see Fail).
func (c *Client) ReportProgress(ctx context.Context, id, token uuid.UUID, p api.Progress) (cancelRequested bool, err error) {
	var out api.ProgressResponse
	req := api.ProgressRequest{LeaseToken: token, Phase: storableText(p.Phase), Done: p.Done, Total: p.Total, Items: p.Items}
	if _, _, err := c.do(ctx, http.MethodPost, workerJobPath(id, "progress"), nil, req, &out); err != nil {
		return false, err
	}
	return out.CancelRequested, nil
}

// SaveCheckpoint stores a claimed job's checkpoint (kept across retries).
func (c *Client) SaveCheckpoint(ctx context.Context, id, token uuid.UUID, checkpoint json.RawMessage) error {
	_, err := c.Checkpoint(ctx, id, token, checkpoint)
	return err
}

// Checkpoint stores a claimed job's checkpoint (kept across retries) and
// extends its lease; it reports whether cancel was requested.
func (c *Client) Checkpoint(ctx context.Context, id, token uuid.UUID, checkpoint json.RawMessage) (cancelRequested bool, err error) {
	var out api.CheckpointResponse
	_, _, err = c.do(ctx, http.MethodPost, workerJobPath(id, "checkpoint"), nil, api.CheckpointRequest{LeaseToken: token, Checkpoint: checkpoint}, &out)
	return out.CancelRequested, err
}

// ReportOutcomes sends up to api.MaxOutcomes outcomes of claimed jobs in
// one request (POST /api/v1/worker/outcomes) and returns each one's
// answer, in order: Status 200 with the State the job reached (Repeat
// when the outcome had been applied already, its answer lost), or the
// Problem that refused it (409 lease-lost, 422 naming the member…).
// Outcomes are idempotent: a batch whose answer was lost can be sent
// again as it was. An error is the request's as a whole. The error
// texts are sent as Fail sends them.
func (c *Client) ReportOutcomes(ctx context.Context, outcomes []api.OutcomeItem) ([]api.OutcomeAnswer, error) {
	for i := range outcomes {
		outcomes[i].Error = storableText(outcomes[i].Error)
	}
	var out api.OutcomesResponse
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/worker/outcomes", nil, api.OutcomesRequest{Outcomes: outcomes}, &out); err != nil {
		return nil, err
	}
	if len(out.Outcomes) != len(outcomes) {
		return nil, fmt.Errorf("jobd client: %d answers to %d outcomes", len(out.Outcomes), len(outcomes))
	}
	return out.Outcomes, nil
}

// Complete finishes a claimed job with its result and returns the state
// it reached.
func (c *Client) Complete(ctx context.Context, id, token uuid.UUID, result json.RawMessage) (api.State, error) {
	var out api.FinishResponse
	_, _, err := c.do(ctx, http.MethodPost, workerJobPath(id, "complete"), nil, api.CompleteRequest{LeaseToken: token, Result: result}, &out)
	return out.State, err
}

// Fail fails a claimed job; a retryable failure with attempts left
// queues it again after its queue's backoff (the server's). It returns
// the state the job reached. A NUL in msg (a program's stderr may hold
// one) is sent as U+FFFD, as encoding/json sends invalid UTF-8: the
// server refuses text it cannot store, and a job's failure must not be
// lost for a byte of its message.
func (c *Client) Fail(ctx context.Context, id, token uuid.UUID, msg string, retryable bool) (api.State, error) {
	return c.fail(ctx, id, api.FailRequest{LeaseToken: token, Error: msg, Retryable: retryable})
}

// FailRetryAfter fails a claimed job retryably: with attempts left it is
// queued again after delay instead of its queue's backoff. It returns
// the state the job reached; msg is sent as Fail sends it.
func (c *Client) FailRetryAfter(ctx context.Context, id, token uuid.UUID, msg string, delay time.Duration) (api.State, error) {
	d := api.Duration(max(delay, 0))
	return c.fail(ctx, id, api.FailRequest{LeaseToken: token, Error: msg, Retryable: true, RetryAfter: &d})
}

// FailThrottle fails a claimed job because the downstream it calls is
// overloaded: it is queued again after delay (above zero, at most
// api.MaxThrottle), its attempt not counted, and no job of its queue, or
// of its partition when the queue throttles by partition_key, starts
// anywhere before then. It returns the state the job reached; msg is
// sent as Fail sends it.
func (c *Client) FailThrottle(ctx context.Context, id, token uuid.UUID, msg string, delay time.Duration) (api.State, error) {
	d := api.Duration(delay)
	return c.fail(ctx, id, api.FailRequest{LeaseToken: token, Error: msg, Throttle: &d})
}

func (c *Client) fail(ctx context.Context, id uuid.UUID, req api.FailRequest) (api.State, error) {
	var out api.FinishResponse
	req.Error = storableText(req.Error)
	_, _, err := c.do(ctx, http.MethodPost, workerJobPath(id, "fail"), nil, req, &out)
	return out.State, err
}

// Release gives a claimed job back unfinished (the worker is shutting
// down): it is queued again at once, its attempt not counted, or
// canceled when its cancel was requested. It returns the state the job
// reached.
func (c *Client) Release(ctx context.Context, id, token uuid.UUID) (api.State, error) {
	var out api.FinishResponse
	_, _, err := c.do(ctx, http.MethodPost, workerJobPath(id, "release"), nil, api.ReleaseRequest{LeaseToken: token}, &out)
	return out.State, err
}

// storableText replaces the NUL characters of s, which the server
// refuses in a worker's text, with U+FFFD.
func storableText(s string) string {
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

func workerJobPath(id uuid.UUID, action string) string {
	return "/api/v1/worker/jobs/" + id.String() + "/" + action
}
