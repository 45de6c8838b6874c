package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/apiconv"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
)

// delivery is the args of a delivery job: an alert or a ping to a
// subscription (Webhook, with the Payload to send as it is), or the
// callback of a job (URL, JobID and FinishedAt, the final version of the
// job it reports, read at each attempt).
type delivery struct {
	Type       string          `json:"type"`
	Webhook    string          `json:"webhook,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	URL        string          `json:"url,omitempty"`
	JobID      *uuid.UUID      `json:"job_id,omitempty"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
}

// deliveryResult is a delivery job's result: the receiver's status, or
// why nothing was sent.
type deliveryResult struct {
	Status  int    `json:"status,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// attempt is what one attempt sends, and with what.
type attempt struct {
	url    string
	key    []byte
	body   []byte
	client *http.Client
}

// maxRetryAfter caps a receiver's Retry-After.
const maxRetryAfter = time.Hour

// deliver is the handler of Kind: one attempt of a delivery.
func (s *Service) deliver(ctx context.Context, j *engine.Job[delivery]) (deliveryResult, error) {
	started := s.clock.Now()
	a, skipped, err := s.prepare(ctx, j.Args)
	if err != nil {
		return deliveryResult{}, s.done(j.Job, j.Args.Type, started, err)
	}
	if skipped != "" {
		s.record(j.Args.Type, observe.WebhookSkipped, started)
		return deliveryResult{Skipped: skipped}, nil
	}
	status, err := s.post(ctx, a, j.ID.String())
	if err != nil {
		return deliveryResult{}, s.done(j.Job, j.Args.Type, started, err)
	}
	s.record(j.Args.Type, observe.WebhookDelivered, started)
	return deliveryResult{Status: status}, nil
}

// prepare reads what an attempt of d sends: the subscription's URL and
// secret and d's payload, or the callback's job, rendered. skipped says
// why nothing is to be sent.
func (s *Service) prepare(ctx context.Context, d delivery) (a attempt, skipped string, err error) {
	switch {
	case d.Webhook != "":
		sub, err := s.store.WebhookGet(ctx, d.Webhook)
		if errors.Is(err, job.ErrNotFound) {
			return attempt{}, "the subscription was deleted", nil
		}
		if err != nil {
			return attempt{}, "", err
		}
		key, err := ParseSecret(sub.Secret)
		if err != nil {
			return attempt{}, "", engine.Permanent(fmt.Errorf("subscription %s: %w", sub.ID, err))
		}
		return attempt{url: sub.URL, key: key, body: d.Payload, client: s.open}, "", nil
	case d.URL != "" && d.JobID != nil && d.FinishedAt != nil:
		jb, err := s.store.JobGet(ctx, *d.JobID)
		if errors.Is(err, job.ErrNotFound) {
			return attempt{}, "the job was removed", nil
		}
		if err != nil {
			return attempt{}, "", err
		}
		if jb.FinishedAt == nil || !jb.FinishedAt.Equal(*d.FinishedAt) {
			return attempt{}, "the job was retried since; its next end has a callback of its own", nil
		}
		body, err := callbackBody(jb)
		if err != nil {
			return attempt{}, "", engine.Permanent(err)
		}
		return attempt{url: d.URL, key: s.callbackKey, body: body, client: s.guarded}, "", nil
	}
	return attempt{}, "", engine.Permanent(errors.New("a delivery names neither a subscription nor a callback"))
}

// callbackBody is the payload of a callback: the job as the API shows it.
func callbackBody(j *job.Job) ([]byte, error) {
	data, err := json.Marshal(apiconv.Job(j))
	if err != nil {
		return nil, fmt.Errorf("encode job %s: %w", j.ID, err)
	}
	return json.Marshal(api.WebhookPayload{Type: api.EventJobFinished, Timestamp: j.FinishedAt.UTC(), Data: data})
}

// post makes one attempt: it returns the receiver's 2xx status, or an
// error saying whether to try again (engine.Permanent, engine.RetryAfter).
func (s *Service) post(ctx context.Context, a attempt, id string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(a.body))
	if err != nil {
		return 0, engine.Permanent(fmt.Errorf("POST %s: %w", redacted(a.url), errors.Unwrap(err)))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.cfg.UserAgent)
	setHeaders(req.Header, a.key, id, s.clock.Now(), a.body)
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, connectError(a.url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	where := redacted(resp.Request.URL.String())
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return code, nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		err := fmt.Errorf("POST %s: the receiver answered %s", where, resp.Status)
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), s.clock.Now()); ok {
			return 0, engine.RetryAfter(err, d)
		}
		return 0, err
	case code >= 300 && code < 400:
		return 0, engine.Permanent(fmt.Errorf("POST %s: the receiver answered %s; only 307 and 308 redirects are followed", where, resp.Status))
	default:
		return 0, engine.Permanent(fmt.Errorf("POST %s: the receiver answered %s, which is final", where, resp.Status))
	}
}

// connectError is the error of an attempt that got no answer: permanent
// when the address is forbidden or a redirect was not followed, else to
// be retried. It names the URL without its query.
func connectError(u string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = fmt.Errorf("%s %s: %w", ue.Op, redacted(ue.URL), ue.Err)
	}
	if errors.Is(err, ErrForbiddenAddress) || errors.Is(err, errRedirect) {
		return engine.Permanent(err)
	}
	return err
}

// redacted is a URL as errors and logs show it: scheme, host and path,
// without its user information, query or fragment, which may carry a
// token.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a bad URL)"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// retryAfter reads a Retry-After header (seconds or an HTTP date),
// capped at maxRetryAfter.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(h); err == nil && secs >= 0 {
		return min(time.Duration(secs)*time.Second, maxRetryAfter), true
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}

// done records a failed attempt and returns its error.
func (s *Service) done(j *job.Job, event string, started time.Time, err error) error {
	outcome := observe.WebhookRetried
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		outcome = observe.WebhookRefused
	case engine.IsPermanent(err), j.Attempt >= j.MaxAttempts:
		outcome = observe.WebhookFailed
	}
	s.record(event, outcome, started)
	return err
}

// record observes one attempt and fires the Delivered signal.
func (s *Service) record(event, outcome string, started time.Time) {
	s.obs.WebhookAttempt(eventLabel(event), outcome, s.clock.Now().Sub(started))
	s.points.Delivered.Report(outcome)
}

// eventLabel bounds the event label of the metrics to the known types.
func eventLabel(event string) string {
	switch event {
	case api.EventJobFailed, api.EventJobRescued, api.EventJobTimedOut, api.EventFailurePattern, api.EventWorkerOffline,
		api.EventQueueBacklog, api.EventPing, api.EventJobFinished:
		return event
	}
	return "other"
}
