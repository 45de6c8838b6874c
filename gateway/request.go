package gateway

import (
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// Request is the args of a gateway job: the request to send upstream.
type Request struct {
	// Upstream names the configured upstream.
	Upstream string `json:"upstream"`
	Method   string `json:"method"`
	// Path is the escaped path below the upstream's URL and the raw
	// query, as the caller sent them: "/reports/42?full=1".
	Path string `json:"path"`
	// Header holds the caller's headers, less the hop-by-hop ones, the
	// async ones and, with authentication on, jobd's own Authorization.
	Header http.Header `json:"headers,omitempty"`
	// Body is the request body (base64 in JSON).
	Body []byte `json:"body,omitempty"`
	// Store keeps the upstream's response body for retrieval ("X-Async:
	// store"); fire-and-forget ("X-Async: true") keeps only its status
	// and headers.
	Store bool `json:"store"`
}

// Response is the result of a gateway job: the upstream's answer.
type Response struct {
	Status int         `json:"status"`
	Header http.Header `json:"headers,omitempty"`
	// Body is the response body (base64 in JSON); empty for
	// fire-and-forget requests.
	Body []byte `json:"body,omitempty"`
}

// The headers that ask for asynchronous execution, and those that carry
// the job's id back.
const (
	headerAsync         = "X-Async"
	headerArangoAsync   = "X-Arango-Async"
	headerAsyncID       = "X-Async-Id"
	headerArangoAsyncID = "X-Arango-Async-Id"
)

// hopHeaders apply to one connection, not to the request: a proxy drops
// them (RFC 9110 section 7.6.1), as net/http/httputil does.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// dropHopHeaders removes the hop-by-hop headers from h, with those the
// Connection header names.
func dropHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// requestHeader is what of r's headers goes upstream: no hop-by-hop or
// async header, no Authorization when it is jobd's own credential (auth
// on), and the X-Forwarded-* headers of a proxy. The body's length is the
// stored body's.
func requestHeader(r *http.Request, authOn bool) http.Header {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	dropHopHeaders(h)
	for _, name := range []string{headerAsync, headerArangoAsync, "Content-Length", "Forwarded", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		h.Del(name)
	}
	if authOn {
		h.Del("Authorization")
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := h.Values("X-Forwarded-For"); len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		h.Set("X-Forwarded-For", ip)
	}
	h.Set("X-Forwarded-Host", r.Host)
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	h.Set("X-Forwarded-Proto", proto)
	return h
}

// responseHeader is what of an upstream's response headers is kept: no
// hop-by-hop header, and no Content-Length (the replay sets its own).
func responseHeader(h http.Header) http.Header {
	h = h.Clone()
	dropHopHeaders(h)
	h.Del("Content-Length")
	if len(h) == 0 {
		return nil
	}
	return h
}

// target is the URL of rest (an escaped path and maybe "?query") below
// the upstream's URL, without its user information (see setUser).
func (u *upstream) target(rest string) (*url.URL, error) {
	path, query, _ := strings.Cut(rest, "?")
	base := u.URL.EscapedPath()
	switch {
	case path == "":
	case strings.HasSuffix(base, "/") && strings.HasPrefix(path, "/"):
		base += path[1:]
	case !strings.HasSuffix(base, "/") && !strings.HasPrefix(path, "/"):
		base += "/" + path
	default:
		base += path
	}
	if base == "" {
		base = "/"
	}
	p, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	t := *u.URL
	t.User = nil
	t.Path, t.RawPath = p.Path, p.RawPath
	t.RawQuery = query
	return &t, nil
}

// setUser sends the upstream URL's user information as Basic
// authentication, unless the request carries an Authorization already.
func (u *upstream) setUser(h http.Header) {
	if u.URL.User == nil || h.Get("Authorization") != "" {
		return
	}
	pass, _ := u.URL.User.Password()
	r := http.Request{Header: h}
	r.SetBasicAuth(u.URL.User.Username(), pass)
}

// splitForward splits an escaped /gw/NAME/REST path into NAME and /REST
// ("" for /gw/NAME).
func splitForward(escapedPath string) (name, rest string, ok bool) {
	p, ok := strings.CutPrefix(escapedPath, "/gw/")
	if !ok {
		return "", "", false
	}
	name, rest, found := strings.Cut(p, "/")
	if found {
		rest = "/" + rest
	}
	return name, rest, name != ""
}
