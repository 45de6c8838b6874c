package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// Rerun runs a finished job again (succeeded, failed or canceled): queued
// again with its attempts reset, its result readable until a worker
// claims it. args, when not nil, replace the job's args. A rerun of a job
// queued or running because of a rerun, without other args, returns it
// as it is. errors.Is(err, ErrConflict) for another queued or running
// job, or when the rerun would make an active twin.
func (c *Client) Rerun(ctx context.Context, id uuid.UUID, args []byte) (*api.Job, error) {
	var body any
	if args != nil {
		body = api.RerunRequest{Args: args}
	}
	var j api.Job
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/jobs/"+id.String()+"/rerun", nil, body, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// Schedules returns every schedule, by name.
func (c *Client) Schedules(ctx context.Context) ([]api.Schedule, error) {
	var out api.ScheduleList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/schedules", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Schedules, nil
}

// Schedule returns one schedule; errors.Is(err, ErrNotFound) when there
// is none.
func (c *Client) Schedule(ctx context.Context, name string) (*api.Schedule, error) {
	var out api.Schedule
	if _, _, err := c.do(ctx, http.MethodGet, schedulePath(name, ""), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetSchedule creates or replaces a schedule and reports whether it
// created it. errors.Is(err, ErrConflict) when the server's
// configuration (--schedules) owns the name.
func (c *Client) SetSchedule(ctx context.Context, name string, req api.ScheduleRequest) (sc *api.Schedule, created bool, err error) {
	sc = new(api.Schedule)
	status, _, err := c.do(ctx, http.MethodPut, schedulePath(name, ""), nil, req, sc)
	if err != nil {
		return nil, false, err
	}
	return sc, status == http.StatusCreated, nil
}

// DeleteSchedule deletes a schedule; its jobs stay.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	_, _, err := c.do(ctx, http.MethodDelete, schedulePath(name, ""), nil, nil, nil)
	return err
}

// PauseSchedule stops a schedule's ticks until ResumeSchedule.
func (c *Client) PauseSchedule(ctx context.Context, name string) (*api.Schedule, error) {
	return c.scheduleAction(ctx, name, "pause")
}

// ResumeSchedule starts a paused schedule again at its first tick after
// now.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (*api.Schedule, error) {
	return c.scheduleAction(ctx, name, "resume")
}

func (c *Client) scheduleAction(ctx context.Context, name, action string) (*api.Schedule, error) {
	var out api.Schedule
	if _, _, err := c.do(ctx, http.MethodPost, schedulePath(name, action), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TriggerSchedule inserts one job of the schedule now and reports whether
// it created it: with idempotencyKey, a later trigger with the same key
// returns the first one's job (created false).
func (c *Client) TriggerSchedule(ctx context.Context, name, idempotencyKey string) (j *api.Job, created bool, err error) {
	var hdr http.Header
	if idempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	j = new(api.Job)
	status, _, err := c.doWith(ctx, http.MethodPost, schedulePath(name, "trigger"), nil, hdr, nil, j)
	if err != nil {
		return nil, false, err
	}
	return j, status == http.StatusCreated, nil
}

func schedulePath(name, action string) string {
	p := "/api/v1/schedules/" + url.PathEscape(name)
	if action != "" {
		p += "/" + action
	}
	return p
}
