package problem

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/jobd/jobd/api"
)

// RetryAfter is the Retry-After of a retryable problem (busy,
// unavailable) whose writer set none.
const RetryAfter = 5 * time.Second

// WriteError answers err with FromError's problem. An error of no known
// kind is logged with its cause (as msg, with the request's method and
// path) and answered as an internal error, unless r's caller went away:
// then nobody reads the answer, and none is written.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, msg string, err error) {
	WriteErrorDocument(w, r, log, msg, err, nil)
}

// WriteErrorDocument answers err as WriteError does, with doc(p) as the
// body: p with extension members (see WriteDocument); nil doc writes p.
func WriteErrorDocument(w http.ResponseWriter, r *http.Request, log *slog.Logger, msg string, err error, doc func(*api.Problem) any) {
	p, ok := fromError(err)
	if !ok {
		if r.Context().Err() != nil {
			return
		}
		log.Error(msg, "method", r.Method, "path", r.URL.Path, "err", err)
		p = FromError(err)
	}
	if doc == nil {
		Write(w, p)
		return
	}
	WriteDocument(w, p, doc(p))
}

// Write answers p as a problem document.
func Write(w http.ResponseWriter, p *api.Problem) { WriteDocument(w, p, p) }

// WriteDocument answers p with doc as the body: p itself, or a wire type
// that embeds p with extension members (api.ProcessTaskTimeout). Every
// problem answer has the same headers: the problem media type, no-store,
// WWW-Authenticate on a 401 and Retry-After on a retryable kind; its JSON
// leaves <, > and & unescaped, as every jobd answer does.
func WriteDocument(w http.ResponseWriter, p *api.Problem, doc any) {
	b, err := marshal(doc)
	if err != nil {
		b, _ = marshal(p) // a Problem always encodes
	}
	h := w.Header()
	h.Set("Content-Type", api.ProblemContentType)
	h.Set("Cache-Control", "no-store")
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="jobd"`)
	}
	if k, ok := api.LookupProblem(p.Type); ok && k.Retryable() && h.Get("Retry-After") == "" {
		h.Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(b)
}

// marshal encodes v as one line of JSON ending in a newline, leaving <, >
// and & as they are.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
