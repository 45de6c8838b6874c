package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
)

// keepAliveInterval spaces the comment lines that keep an idle stream
// open through proxies.
const keepAliveInterval = 15 * time.Second

// stream: GET /api/v1/jobs/{id}/stream, Server-Sent Events. The first
// event is the job as it is; then one event whenever its state, progress
// or updated_at changes; the last event is the job in its final state,
// after which the stream ends. Each event is "event: job", "id:" the
// job's updated_at in Unix microseconds and "data:" the api.Job JSON.
// There is no change notification in the store, so the job is re-read
// every PollInterval.
func (s *server) stream(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	last, err := s.callerJob(r, id)
	if err != nil {
		return err // nothing written yet: answered as a problem
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s.obs.HTTP.Subscribers(1)
	defer s.obs.HTTP.Subscribers(-1)
	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	if err := sse.job(last); err != nil || last.State.Final() {
		return nil
	}

	tick := s.clock.NewTimer(s.cfg.PollInterval)
	defer tick.Stop()
	keepAlive := s.clock.NewTimer(keepAliveInterval)
	defer keepAlive.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-keepAlive.C():
			if err := sse.comment("keep-alive"); err != nil {
				return nil
			}
			keepAlive.Reset(keepAliveInterval)
			continue
		case <-tick.C():
		}
		j, err := s.store.JobGet(ctx, id)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, job.ErrNotFound):
			_ = sse.event("error", "", problem.New(api.ProblemNotFound, "", "the job was deleted"))
			return nil
		case err != nil:
			// The answer has started: end the stream and let the client
			// reconnect rather than write a problem into it.
			s.log.Warn("job stream: read failed", "job", id, "err", err)
			_ = sse.event("error", "", problem.New(api.ProblemUnavailable, "", "reading the job failed; reconnect"))
			return nil
		}
		if changed(last, j) {
			if err := sse.job(j); err != nil {
				return nil
			}
			last = j
		}
		if j.State.Final() {
			return nil
		}
		tick.Reset(s.cfg.PollInterval)
	}
}

// changed reports whether b differs from a in what a stream shows.
func changed(a, b *job.Job) bool {
	return a.State != b.State || !a.UpdatedAt.Equal(b.UpdatedAt) || a.CancelRequested != b.CancelRequested ||
		a.Progress.Phase != b.Progress.Phase || a.Progress.Done != b.Progress.Done ||
		a.Progress.Total != b.Progress.Total || !bytes.Equal(a.Progress.Items, b.Progress.Items)
}

// sseWriter writes Server-Sent Events, flushing each.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *sseWriter) job(j *job.Job) error {
	return s.event("job", fmt.Sprint(j.UpdatedAt.UnixMicro()), toAPIJob(j))
}

func (s *sseWriter) event(name, id string, v any) error {
	data, err := marshal(v) // one line: JSON escapes newlines in strings
	if err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\n", name)
	if id != "" {
		fmt.Fprintf(&b, "id: %s\n", id)
	}
	fmt.Fprintf(&b, "data: %s\n", data) // data ends in a newline: the blank line ends the event
	if _, err := s.w.Write(b.Bytes()); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sseWriter) comment(text string) error {
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	return s.rc.Flush()
}
