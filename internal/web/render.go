package web

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
)

// pageData is what every page's template gets.
type pageData struct {
	Title string
	// Nav names the section the page belongs to.
	Nav    string
	Viewer viewer
	// CSRF is the token of the page's forms.
	CSRF string
	// CanWrite: the viewer may act (admin scope); CanSubmit: repair;
	// CanCancel: cancel a job (cancel scope, which admin grants).
	CanWrite, CanSubmit, CanCancel bool
	// Message is an action's outcome, shown once.
	Message string
	// Here is the page's own path and query, where an action returns.
	Here string
	Data any
}

// render writes page name with data. The page is rendered into a buffer
// first, so that a template error is answered as an error, not half a
// page.
func (s *server) render(w http.ResponseWriter, r *http.Request, v viewer, status int, name, title string, data any) {
	if err := s.ensureSID(w, r, &v); err != nil {
		s.log.Error("web: session id", "err", err)
	}
	pd := pageData{
		Title: title, Nav: name, Viewer: v, CSRF: s.keys.csrfToken(v.sid),
		CanWrite: v.can(scopeAdmin), CanSubmit: v.can(scopeSubmit), CanCancel: v.can(scopeCancel),
		Message: r.URL.Query().Get("msg"), Here: r.URL.RequestURI(), Data: data,
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", pd); err != nil {
		s.log.Error("web: render", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers err as an error page, with the status and detail of its
// problem (internal/problem, the API's one mapping).
func (s *server) fail(w http.ResponseWriter, r *http.Request, v *viewer, err error) {
	if errors.Is(err, r.Context().Err()) && r.Context().Err() != nil {
		return // the browser went away
	}
	p := problem.FromError(err)
	if p.Status >= 500 {
		s.log.Error("web: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	vv := viewer{}
	if v != nil {
		vv = *v
	}
	if k, ok := api.LookupProblem(p.Type); ok && k.Retryable() {
		w.Header().Set("Retry-After", strconv.Itoa(int(problem.RetryAfter/time.Second)))
	}
	s.render(w, r, vv, p.Status, "error", p.Title, p)
}

func notFound(format string, args ...any) error {
	return problem.Errorf(api.ProblemNotFound, "", format, args...)
}

func forbidden(format string, args ...any) error {
	return problem.Errorf(api.ProblemForbidden, "", format, args...)
}

func badRequest(format string, args ...any) error {
	return problem.Errorf(api.ProblemBadRequest, "", format, args...)
}

// link is the href of path with query q: a page of the dashboard, its
// query encoded.
func link(path string, q url.Values) template.URL {
	return template.URL(path + "?" + q.Encode())
}

// plural is "1 job", "2 jobs".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
