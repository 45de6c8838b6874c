package gateway

import (
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/jobd/jobd/api"
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
// on), and the X-Forwarded-* headers setForwarded writes, as the
// synchronous path writes them. The body's length is the stored body's.
func requestHeader(r *http.Request, authOn bool) http.Header {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	dropHopHeaders(h)
	for _, name := range []string{headerAsync, headerArangoAsync, "Content-Length"} {
		h.Del(name)
	}
	if authOn {
		h.Del("Authorization")
	}
	setForwarded(h, r)
	return h
}

// setForwarded writes the forwarding headers of a request to an upstream,
// for both paths (the proxy's Rewrite, the queued request): jobd trusts no
// proxy in front of it, so the caller's own Forwarded and X-Forwarded-*
// headers are dropped, then X-Forwarded-For is the address the caller
// connected from, X-Forwarded-Host the host it asked for and
// X-Forwarded-Proto its scheme (httputil.ProxyRequest.SetXForwarded's
// values).
func setForwarded(out http.Header, in *http.Request) {
	for _, name := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		out.Del(name)
	}
	if ip, _, err := net.SplitHostPort(in.RemoteAddr); err == nil {
		out.Set("X-Forwarded-For", ip)
	}
	out.Set("X-Forwarded-Host", in.Host)
	proto := "http"
	if in.TLS != nil {
		proto = "https"
	}
	out.Set("X-Forwarded-Proto", proto)
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
// the upstream's URL, without its user information (see setUser). A path
// with a dot segment, encoded or not (checkPath), is a 400 problem.
func (u *upstream) target(rest string) (*url.URL, error) {
	path, query, _ := strings.Cut(rest, "?")
	if err := checkPath(path); err != nil {
		return nil, err
	}
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
		return nil, problemf(api.ProblemBadRequest, "path", "the path %q does not parse: %v", path, err)
	}
	t := *u.URL
	t.User = nil
	t.Path, t.RawPath = p.Path, p.RawPath
	t.RawQuery = query
	return &t, nil
}

// maxUnescapes bounds how many times checkPath decodes a path: more than
// any server decodes it.
const maxUnescapes = 4

// checkPath refuses an escaped path that could leave the upstream's base
// path once the upstream decodes it: one with a ".." segment as it is, or
// once its escapes are decoded, once or again (%2e%2e, ..%2f, %252e%252e),
// with "\" also taken as a separator (..%5c) and a segment's ";"
// parameters ignored (..;x). A path from a client passes as it is:
// ServeMux has already sent it to the clean path when it had a literal
// dot segment; only encoded ones reach here.
func checkPath(escaped string) error {
	p := escaped
	for i := 0; ; i++ {
		if dotDot(p) {
			return problemf(api.ProblemBadRequest, "path",
				"the path %q holds a \"..\" segment (maybe percent-encoded: %%2e%%2e, ..%%2f, ..%%5c, or encoded twice), which could leave the upstream's base path; nothing was forwarded", escaped)
		}
		next := lenientUnescape(p)
		if next == p || i == maxUnescapes {
			return nil
		}
		p = next
	}
}

// dotDot reports whether p has a ".." segment, "/" and "\\" both
// separating segments and a segment's ";" parameters ignored.
func dotDot(p string) bool {
	for seg := range strings.FieldsFuncSeq(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		seg, _, _ = strings.Cut(seg, ";")
		if seg == ".." {
			return true
		}
	}
	return false
}

// lenientUnescape decodes every well-formed %XX of s and leaves any other
// "%" as it is, as lenient servers do.
func lenientUnescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
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
