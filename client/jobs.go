package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// Submit creates a job. created is false when the server returned an
// existing job instead: the idempotency key, or with Unique "active" an
// active duplicate, matched; to a key without the read scope the server
// then tells only the job's ID and State, the only members of j set. The
// idempotency key sent with a different request fails with an error
// matching ErrIdempotencyMismatch.
func (c *Client) Submit(ctx context.Context, req api.SubmitRequest) (j *api.Job, created bool, err error) {
	j = new(api.Job)
	status, _, err := c.do(ctx, http.MethodPost, "/api/v1/jobs", nil, req, j)
	if err != nil {
		return nil, false, err
	}
	return j, status == http.StatusCreated, nil
}

// SubmitBatch creates up to api.MaxBatchJobs jobs in one request and one
// transaction (POST /api/v1/jobs/batch), and answers each in order:
// Status 201 with the new job's ID and State, 200 with those of the job
// its idempotency key (or active duplicate) matched, or 409 with a
// Problem for a key that names a job of a queue the caller cannot see.
// All or nothing: when one job is refused, none is created, and the
// error is an *Error whose Problem.Field names the job's member as
// "jobs[3].kind".
func (c *Client) SubmitBatch(ctx context.Context, reqs []api.SubmitRequest) ([]api.SubmitBatchItem, error) {
	var out api.SubmitBatchResponse
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/jobs/batch", nil, api.SubmitBatchRequest{Jobs: reqs}, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// Get returns a job.
func (c *Client) Get(ctx context.Context, id uuid.UUID) (*api.Job, error) {
	return c.getJob(ctx, id, 0)
}

// getJob reads a job; wait > 0 asks the server to hold the answer until
// the job is final or the wait ends.
func (c *Client) getJob(ctx context.Context, id uuid.UUID, wait time.Duration) (*api.Job, error) {
	var q url.Values
	if wait > 0 {
		q = url.Values{"wait": {wait.String()}}
	}
	var j api.Job
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/jobs/"+id.String(), q, nil, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Cancel cancels a job: a queued one at once, a running one when its
// worker next hears of it (the returned job then has CancelRequested).
// errors.Is(err, ErrConflict) when the job is already final.
func (c *Client) Cancel(ctx context.Context, id uuid.UUID) (*api.Job, error) {
	return c.post(ctx, id, "cancel")
}

// Retry puts a failed or canceled job back to queued.
// errors.Is(err, ErrConflict) for a job in another state.
func (c *Client) Retry(ctx context.Context, id uuid.UUID) (*api.Job, error) {
	return c.post(ctx, id, "retry")
}

func (c *Client) post(ctx context.Context, id uuid.UUID, action string) (*api.Job, error) {
	var j api.Job
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/jobs/"+id.String()+"/"+action, nil, nil, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Events returns a job's journal, oldest first; each event's ID is its
// position in that job's journal (1, 2, 3…).
func (c *Client) Events(ctx context.Context, id uuid.UUID) ([]api.Event, error) {
	var out api.EventList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/jobs/"+id.String()+"/events", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Events, nil
}

// ListOptions filters List and Count. Zero fields do not filter.
type ListOptions struct {
	Queue        string
	Kind         string
	States       []api.State
	LockKey      string
	PartitionKey string
	// UpdatedSince switches to the feed: jobs updated at or after it,
	// ascending by (updated_at, id).
	UpdatedSince time.Time
	// Cursor continues a listing: the NextCursor of the previous page.
	Cursor string
	// Limit is the page size (server default 50, at most 200).
	Limit int
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("queue", o.Queue)
	set("kind", o.Kind)
	for _, s := range o.States {
		q.Add("state", string(s))
	}
	set("lock_key", o.LockKey)
	set("partition_key", o.PartitionKey)
	if !o.UpdatedSince.IsZero() {
		q.Set("updated_since", o.UpdatedSince.Format(time.RFC3339Nano))
	}
	set("cursor", o.Cursor)
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// List returns one page of jobs; page on with NextCursor.
func (c *Client) List(ctx context.Context, opts ListOptions) (*api.JobList, error) {
	var out api.JobList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/jobs", opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Count returns the number of jobs matching opts (their Cursor and Limit
// ignored) without listing them: the back-pressure check.
func (c *Client) Count(ctx context.Context, opts ListOptions) (int64, error) {
	opts.Cursor = ""
	q := opts.query()
	q.Set("limit", "0")
	_, h, err := c.do(ctx, http.MethodGet, "/api/v1/jobs", q, nil, nil)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(h.Get("X-Total-Count"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("jobd client: X-Total-Count: %w", err)
	}
	return n, nil
}
