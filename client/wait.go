package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// Wait blocks until the job is final and returns it. onUpdate (may be nil)
// is called with the job as it is now and again on each change of state or
// progress, from Wait's goroutine. Wait follows the server's event stream;
// when a stream is not available it falls back to long-polling
// (GET /api/v1/jobs/{id}?wait=). A dropped connection is retried; Wait
// gives up after several failures in a row without news, or when ctx
// ends.
func (c *Client) Wait(ctx context.Context, id uuid.UUID, onUpdate func(api.Job)) (*api.Job, error) {
	w := &waiter{c: c, id: id, onUpdate: onUpdate}
	return w.run(ctx)
}

const (
	longPollWait    = 30 * time.Second
	maxWaitFailures = 5
)

type waiter struct {
	c        *Client
	id       uuid.UUID
	onUpdate func(api.Job)
	last     *api.Job
	news     bool // an update arrived since the last failure
}

func (w *waiter) emit(j api.Job) {
	if w.last != nil && !jobChanged(*w.last, j) {
		return
	}
	w.last = &j
	w.news = true
	if w.onUpdate != nil {
		w.onUpdate(j)
	}
}

func (w *waiter) final() bool { return w.last != nil && w.last.State.Final() }

func (w *waiter) run(ctx context.Context) (*api.Job, error) {
	useStream := true
	failures := 0
	for {
		w.news = false
		var err error
		if useStream {
			err = w.stream(ctx)
		} else {
			err = w.longPoll(ctx)
		}
		if w.final() {
			return w.last, nil
		}
		if ctx.Err() != nil {
			return w.last, ctx.Err()
		}
		var apiErr *Error
		if errors.As(err, &apiErr) {
			switch {
			case errors.Is(err, ErrUnauthorized), errors.Is(err, ErrForbidden), errors.Is(err, ErrInvalid):
				return w.last, err
			case useStream:
				// An older server or a proxy that does not stream: poll.
				// (An unknown job answers 404 to the poll too.)
				useStream = false
				continue
			case errors.Is(err, ErrNotFound):
				return w.last, err
			}
		}
		if err == nil || w.news {
			failures = 0 // the stream ended early (a restart, a proxy): follow again
		} else {
			failures++
		}
		if failures >= maxWaitFailures {
			return w.last, fmt.Errorf("jobd client: waiting for job %s: %w", w.id, err)
		}
		if err := sleep(ctx, time.Duration(failures)*200*time.Millisecond); err != nil {
			return w.last, err
		}
	}
}

// stream follows the job's event stream until it ends.
func (w *waiter) stream(ctx context.Context) error {
	req, err := w.c.request(ctx, http.MethodGet, "/api/v1/jobs/"+w.id.String()+"/stream", nil, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := w.c.http.Do(req)
	if err != nil {
		return fmt.Errorf("jobd client: job stream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return readError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return &Error{StatusCode: http.StatusNotAcceptable, Problem: api.Problem{Status: http.StatusNotAcceptable, Detail: "the server did not answer with an event stream"}}
	}
	return readEvents(resp.Body, func(event string, data []byte) error {
		switch event {
		case "job":
			var j api.Job
			if err := json.Unmarshal(data, &j); err != nil {
				return fmt.Errorf("jobd client: job stream: decode event: %w", err)
			}
			w.emit(j)
		case "error":
			var p api.Problem
			if json.Unmarshal(data, &p) == nil && p.Status == http.StatusNotFound {
				return &Error{StatusCode: p.Status, Problem: p}
			}
			return fmt.Errorf("jobd client: job stream: %s", data)
		}
		return nil
	})
}

// longPoll reads the job with ?wait= until it is final; the first read,
// when nothing is known yet, does not wait, so that onUpdate shows the job
// at once.
func (w *waiter) longPoll(ctx context.Context) error {
	for {
		wait := longPollWait
		if w.last == nil {
			wait = 0
		}
		j, err := w.c.getJob(ctx, w.id, wait)
		if err != nil {
			return err
		}
		w.emit(*j)
		if j.State.Final() {
			return nil
		}
	}
}

// readEvents parses a Server-Sent Events stream, calling fn with each
// event's name ("message" when unnamed) and data, until the stream ends.
func readEvents(r io.Reader, fn func(event string, data []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var event string
	var data []byte
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("jobd client: job stream: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data != nil {
				if event == "" {
					event = "message"
				}
				if err := fn(event, data); err != nil {
					return err
				}
			}
			event, data = "", nil
		case strings.HasPrefix(line, ":"):
		default:
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "event":
				event = value
			case "data":
				if data != nil {
					data = append(data, '\n')
				}
				data = append(data, value...)
			}
		}
	}
}

// jobChanged reports whether b shows news over a.
func jobChanged(a, b api.Job) bool {
	return a.State != b.State || !a.UpdatedAt.Equal(b.UpdatedAt) || a.CancelRequested != b.CancelRequested ||
		a.Progress.Phase != b.Progress.Phase || a.Progress.Done != b.Progress.Done || a.Progress.Total != b.Progress.Total ||
		string(a.Progress.Items) != string(b.Progress.Items)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
