package httpapi

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
)

// A web page that a browser shows can send requests to any server,
// jobd on 127.0.0.1 included, and a server without credentials (no
// admin secret) would act on them: the rules below keep a browser from
// acting on jobd for a page of another site. Programs that are not
// browsers (curl, the Go client, jobd worker) send none of the headers
// these rules read, and pass.

// CrossSite reports whether r is a browser's request made for a page of
// another site than the one it is sent to: its Sec-Fetch-Site says
// cross-site or same-site (a page on another port of the same host is
// same-site), or, from a browser that does not send Sec-Fetch-Site, its
// Origin is not r's own scheme://host:port ("null" included). With
// navigations, a top-level navigation (a link to a page followed from
// another site: GET or HEAD with Sec-Fetch-Mode navigate) is not
// counted: it reads a page the site cannot see.
func CrossSite(r *http.Request, navigations bool) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return false
	case "cross-site", "same-site":
		return !navigations || !isNavigation(r)
	}
	origin := r.Header.Get("Origin")
	return origin != "" && !sameOrigin(origin, r)
}

// isNavigation reports whether r is a top-level navigation that reads.
func isNavigation(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") != "iframe"
}

// sameOrigin reports whether origin (an Origin header) is r's own:
// scheme (https when r came over TLS, or when a proxy in front says so
// in X-Forwarded-Proto, a header no page can set without a preflight),
// host and port, default ports made explicit.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return strings.EqualFold(u.Scheme, scheme) && hostPort(u.Host, u.Scheme) == hostPort(r.Host, scheme)
}

// hostPort is host ("name", "name:port", "[::1]:port") lowercased with
// its port, the scheme's default when it has none.
func hostPort(host, scheme string) string {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = strings.Trim(host, "[]"), ""
	}
	if port == "" {
		port = "80"
		if strings.EqualFold(scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(h), port)
}

// errCrossSite is the answer to a browser's request for a page of
// another site.
var errCrossSite = problem.Errorf(api.ProblemForbidden, "",
	"a browser's request from a page of another site is refused (Sec-Fetch-Site or Origin); jobd serves no other origin")

// RefuseCrossSite wraps h so that a request CrossSite reports (with
// navigations) is refused with a 403 problem of type forbidden, before h
// sees it: for the routes served beside the API (the async gateway's).
func RefuseCrossSite(h http.Handler, navigations bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if CrossSite(r, navigations) {
			problem.Write(w, problem.FromError(errCrossSite))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// LoopbackHostsOnly wraps h, the handler of a server that listens on a
// loopback address only, so that a request whose Host is not a loopback
// name or address (localhost, NAME.localhost, 127.0.0.0/8, [::1]) is
// refused with a 403 problem of type forbidden. Such a server can be
// reached only from its own machine, but a web page can still reach it
// through DNS rebinding: a name of the page's site that resolves to
// 127.0.0.1 makes the browser send jobd the page's requests as that
// site's own, Host naming it, and read the answers. A request without a
// Host (HTTP/1.0) passes.
func LoopbackHostsOnly(h http.Handler) http.Handler {
	refused := problem.Errorf(api.ProblemForbidden, "Host",
		"this server listens on a loopback address and answers only loopback host names (localhost, 127.0.0.1, [::1]): listen on another address to be reached by another name")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "" && !LoopbackHost(r.Host) {
			problem.Write(w, problem.FromError(refused))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// LoopbackHost reports whether host (a Host header or a listen
// address, with or without a port) names a loopback address only:
// localhost, a name under .localhost, an address of 127.0.0.0/8 or ::1.
func LoopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = strings.Trim(host, "[]")
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// jsonMediaType reports whether a Content-Type value names JSON:
// application/json or application/*+json, with any parameters.
func jsonMediaType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || strings.HasSuffix(sub, "+json"))
}

// checkMediaType refuses, on an open server, a request body that is not
// declared JSON (415): a page of any site can send a form or text/plain
// body without asking the server first (a CORS preflight), but not one
// of type application/json. With authentication on, a page cannot send
// the bearer credential without that preflight, which jobd never
// answers, and the rule is not applied: it would only refuse programs
// that send JSON undeclared, as jobd accepted before.
func (s *server) checkMediaType(r *http.Request) error {
	if !s.auth.open || jsonMediaType(r.Header.Get("Content-Type")) {
		return nil
	}
	got := "none"
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil {
		got = mt
	} else if r.Header.Get("Content-Type") != "" {
		got = "a malformed one"
	}
	return problem.Errorf(api.ProblemUnsupportedMediaType, "Content-Type",
		"the body must be sent with Content-Type: application/json (this server has no credentials, and refuses other types so that a web page cannot send it one); got %s", got)
}
