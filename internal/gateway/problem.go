package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
)

// The problem types of the gateway's own answers, beside the API's. They
// are api's, named here too for the gateway's callers.
const (
	// ProblemBusy (503): too many gateway requests are pending; retry
	// after the Retry-After delay. Nothing was queued.
	ProblemBusy = api.ProblemBusy
	// ProblemUpstreamFailed (502): the upstream gave no usable answer: a
	// connection error, a 5xx on every attempt, or a response over the
	// size limit.
	ProblemUpstreamFailed = api.ProblemUpstreamFailed
	// ProblemUpstreamTimeout (504): a synchronous call to the upstream
	// did not answer within its timeout.
	ProblemUpstreamTimeout = api.ProblemUpstreamTimeout
	// ProblemCanceled (410): the request was canceled before the
	// upstream answered; there is no response to return.
	ProblemCanceled = api.ProblemCanceled
)

// problemf returns a problem error of type typ, naming field when not
// empty.
func problemf(typ, field, format string, args ...any) *problem.Error {
	return problem.Errorf(typ, field, format, args...)
}

// writeError answers err as a problem, by the mapping the API uses
// (internal/problem); the cause of an internal error goes to the log only.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	problem.WriteError(w, r, g.log, "gateway: request failed", err)
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
