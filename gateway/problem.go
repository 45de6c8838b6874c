package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// The problem types of the gateway's own answers, beside the API's.
const (
	// ProblemBusy (503): too many gateway requests are pending; retry
	// after the Retry-After delay. Nothing was queued.
	ProblemBusy = "https://jobd.dev/problems/busy"
	// ProblemUpstreamFailed (502): the upstream gave no usable answer: a
	// connection error, a 5xx on every attempt, or a response over the
	// size limit.
	ProblemUpstreamFailed = "https://jobd.dev/problems/upstream-failed"
	// ProblemUpstreamTimeout (504): a synchronous call to the upstream
	// did not answer within its timeout.
	ProblemUpstreamTimeout = "https://jobd.dev/problems/upstream-timeout"
	// ProblemCanceled (410): the request was canceled before the
	// upstream answered; there is no response to return.
	ProblemCanceled = "https://jobd.dev/problems/canceled"
)

var problemTypes = map[int]struct{ uri, title string }{
	http.StatusBadRequest:            {api.ProblemBadRequest, "Bad request"},
	http.StatusUnauthorized:          {api.ProblemUnauthorized, "Unauthorized"},
	http.StatusForbidden:             {api.ProblemForbidden, "Forbidden"},
	http.StatusNotFound:              {api.ProblemNotFound, "Not found"},
	http.StatusMethodNotAllowed:      {api.ProblemMethodNotAllowed, "Method not allowed"},
	http.StatusConflict:              {api.ProblemWrongState, "Wrong state"},
	http.StatusGone:                  {ProblemCanceled, "Canceled"},
	http.StatusRequestEntityTooLarge: {api.ProblemTooLarge, "Request body too large"},
	http.StatusUnprocessableEntity:   {api.ProblemValidation, "Invalid input"},
	http.StatusInternalServerError:   {api.ProblemInternal, "Internal server error"},
	http.StatusBadGateway:            {ProblemUpstreamFailed, "Upstream failed"},
	http.StatusServiceUnavailable:    {ProblemBusy, "Too many pending requests"},
	http.StatusGatewayTimeout:        {ProblemUpstreamTimeout, "Upstream timeout"},
}

// problemf returns a problem of status, naming field when not empty.
func problemf(status int, field, format string, args ...any) *api.Problem {
	t := problemTypes[status]
	return &api.Problem{Type: t.uri, Title: t.title, Status: status, Detail: fmt.Sprintf(format, args...), Field: field}
}

// writeError answers err: an *api.Problem as is, the job sentinels by
// their meaning, anything else as a 500 whose cause goes to the log only.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var p *api.Problem
	var verr *job.ValidationError
	switch {
	case errors.As(err, &p):
	case errors.As(err, &verr):
		p = problemf(http.StatusUnprocessableEntity, verr.Field, "%s", verr.Error())
	case errors.Is(err, job.ErrNotFound):
		p = problemf(http.StatusNotFound, "", "no such async request")
	case errors.Is(err, job.ErrWrongState):
		p = problemf(http.StatusConflict, "", "%s", job.ErrWrongState.Error())
	case r.Context().Err() != nil:
		return // the caller went away
	default:
		g.log.Error("gateway: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		p = problemf(http.StatusInternalServerError, "", "internal server error")
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jobd"`)
	}
	writeJSON(w, p.Status, api.ProblemContentType, p)
}

// writeJSON answers v as JSON of content type ct.
func writeJSON(w http.ResponseWriter, status int, ct string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only the gateway's own plain values come here; they encode.
		b = []byte(`{}`)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
