package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
)

// keepAliveInterval spaces the comment lines that keep an idle stream
// open through proxies.
const keepAliveInterval = 15 * time.Second

// streamWriteSlack is how long one write of a stream may block before
// the stream is cut (a client that stopped reading): its write deadline
// is moved, before each write, to keepAliveInterval and this from now,
// which also covers the gap until the next write (HTTP/2 enforces a
// stream's deadline even between writes).
const streamWriteSlack = 15 * time.Second

// streamRetry is the reconnection delay a stream that reached its
// maximum age sends its client ("retry:", in milliseconds).
const streamRetry = time.Second

// stream: GET /api/v1/jobs/{id}/stream, Server-Sent Events. The first
// event is the job as it is; then one event whenever its state, progress
// or updated_at changes; the last event is the job in its final state,
// after which the stream ends. Each event is "event: job", "id:" the
// job's updated_at in Unix microseconds and "data:" the api.Job JSON.
// There is no change notification in the store, so the job is re-read
// every PollInterval.
//
// Every change of a job moves its updated_at, so an event's id names the
// version of the job it shows. A client that reconnects with
// Last-Event-ID (as EventSource does) is not sent the version it has
// again: when the id is the job's current version, the stream starts
// with the next change (and a final job answers 204 No Content, which
// tells EventSource to stop); any other id gets the current version
// first. Versions between two reads are not replayed, on a reconnect as
// on a live stream: the stream shows the job as it is.
//
// The streams are bounded (StreamLimits): a node's and a caller's open
// streams are capped (429 too-many-requests past either), a stream ends
// after its maximum age with "retry:" (the client reconnects), and one
// whose credential is revoked ends within the recheck interval.
func (s *server) stream(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	last, err := s.callerJob(r, id)
	if err != nil {
		return err // nothing written yet: answered as a problem
	}
	seen := r.Header.Get("Last-Event-ID") == versionID(last)
	if seen && last.State.Final() {
		w.WriteHeader(http.StatusNoContent) // the client has the last event
		return nil
	}
	caller := s.streamCallerOf(r)
	release, err := s.streams.acquire(caller.id)
	if err != nil {
		return err
	}
	defer release()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	holdOpen(w, keepAliveInterval+streamWriteSlack)
	w.WriteHeader(http.StatusOK)
	s.obs.HTTP.Subscribers(1)
	defer s.obs.HTTP.Subscribers(-1)
	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	if seen {
		err = sse.flush()
	} else {
		err = sse.job(last)
	}
	if err != nil || last.State.Final() {
		return nil
	}
	s.follow(r, sse, caller, last)
	return nil
}

// follow sends the changes of job last until it is final, the caller
// goes away, the stream reaches its maximum age or the caller's
// credential no longer holds.
func (s *server) follow(r *http.Request, sse *sseWriter, caller streamCaller, last *job.Job) {
	ctx := r.Context()
	limits := s.streams.Limits()
	tick := s.clock.NewTimer(s.cfg.PollInterval)
	defer tick.Stop()
	keepAlive := s.clock.NewTimer(keepAliveInterval)
	defer keepAlive.Stop()
	maxAge := s.clock.NewTimer(limits.MaxAge)
	defer maxAge.Stop()
	var recheck <-chan time.Time
	var recheckTimer clock.Timer
	if caller.check != nil {
		recheckTimer = s.clock.NewTimer(limits.Recheck)
		defer recheckTimer.Stop()
		recheck = recheckTimer.C()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-maxAge.C():
			_ = sse.retry(streamRetry)
			return
		case <-recheck:
			ok, err := caller.check(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Warn("job stream: checking the credential failed", "job", last.ID, "err", err)
				_ = sse.event("error", "", problem.New(api.ProblemUnavailable, "", "checking the credential failed; reconnect"))
				return
			}
			if !ok {
				_ = sse.event("error", "", problem.New(api.ProblemUnauthorized, "", "the credential of this stream was revoked"))
				return
			}
			recheckTimer.Reset(limits.Recheck)
			continue
		case <-keepAlive.C():
			if err := sse.comment("keep-alive"); err != nil {
				return
			}
			keepAlive.Reset(keepAliveInterval)
			continue
		case <-tick.C():
		}
		j, err := s.store.JobGet(ctx, last.ID)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, job.ErrNotFound):
			_ = sse.event("error", "", problem.New(api.ProblemNotFound, "", "the job was deleted"))
			return
		case err != nil:
			// The answer has started: end the stream and let the client
			// reconnect rather than write a problem into it.
			s.log.Warn("job stream: read failed", "job", last.ID, "err", err)
			_ = sse.event("error", "", problem.New(api.ProblemUnavailable, "", "reading the job failed; reconnect"))
			return
		}
		if changed(last, j) {
			if err := sse.job(j); err != nil {
				return
			}
			last = j
		}
		if j.State.Final() {
			return
		}
		tick.Reset(s.cfg.PollInterval)
	}
}

// versionID is the event id of job j as it is: its updated_at in Unix
// microseconds.
func versionID(j *job.Job) string { return strconv.FormatInt(j.UpdatedAt.UnixMicro(), 10) }

// changed reports whether b differs from a in what a stream shows.
func changed(a, b *job.Job) bool {
	return a.State != b.State || !a.UpdatedAt.Equal(b.UpdatedAt) || a.CancelRequested != b.CancelRequested ||
		a.Progress.Phase != b.Progress.Phase || a.Progress.Done != b.Progress.Done ||
		a.Progress.Total != b.Progress.Total || !bytes.Equal(a.Progress.Items, b.Progress.Items)
}

// sseWriter writes Server-Sent Events, flushing each. Before each write
// it moves the connection's write deadline, so that a stream lives past
// the server's write timeout while its client reads, and no longer.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *sseWriter) job(j *job.Job) error {
	return s.event("job", versionID(j), toAPIJob(j))
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
	return s.write(b.Bytes())
}

func (s *sseWriter) comment(text string) error {
	return s.write([]byte(": " + text + "\n\n"))
}

// retry tells the client to reconnect after d (the stream ends next).
func (s *sseWriter) retry(d time.Duration) error {
	return s.write([]byte("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n\n"))
}

func (s *sseWriter) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(keepAliveInterval + streamWriteSlack))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// flush sends the headers of a stream that has no event to send yet.
func (s *sseWriter) flush() error { return s.rc.Flush() }
