package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/httpapi"
)

// The cookies. The session cookie holds who logged in (an API key's id
// and public prefix, or "admin" for the admin secret), its expiry and a
// random session id, signed with HMAC-SHA256 under a key derived from
// the admin secret: every node that shares the secret accepts it, and
// each request still checks that the key exists (a revoked key's session
// ends at once) and takes the key's scopes as they are now. The key
// itself is never put in a cookie. The anonymous cookie holds only a
// random id, that of the CSRF tokens of a browser without a session (the
// login form; every form when authentication is off).
const (
	sessionCookie = "jobd_session"
	anonCookie    = "jobd_anon"
	adminSubject  = "admin"
	sessionFormat = "v1"
)

// The scopes the dashboard's actions need: those of the matching API
// routes.
const (
	scopeRead   = api.ScopeRead
	scopeSubmit = api.ScopeSubmit
	scopeAdmin  = api.ScopeAdmin
	scopeCancel = api.ScopeCancel
)

// sessionKeys are the keys derived from the admin secret: one signs the
// session cookies, one makes the CSRF tokens.
type sessionKeys struct {
	sign, csrf []byte
}

// deriveKeys derives the keys with HMAC-SHA256 of the secret over fixed
// labels, so that neither key is the secret nor reveals it.
func deriveKeys(secret string) sessionKeys {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	return sessionKeys{sign: derive("jobd dashboard session cookie v1"), csrf: derive("jobd dashboard csrf token v1")}
}

// session is a signed cookie's content.
type session struct {
	Subject string // a key id, or adminSubject
	Prefix  string // the key's public prefix ("" for the admin)
	Expires time.Time
	ID      string // random: what the CSRF tokens are bound to
}

func (k sessionKeys) mac(payload string) []byte {
	m := hmac.New(sha256.New, k.sign)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// encode signs s into a cookie value.
func (k sessionKeys) encode(s session) string {
	payload := strings.Join([]string{sessionFormat, s.Subject, s.Prefix, strconv.FormatInt(s.Expires.Unix(), 10), s.ID}, "|")
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(k.mac(payload))
}

// decode checks a cookie value's signature and expiry.
func (k sessionKeys) decode(v string, now time.Time) (session, bool) {
	enc := base64.RawURLEncoding
	p64, m64, ok := strings.Cut(v, ".")
	if !ok {
		return session{}, false
	}
	payload, err1 := enc.DecodeString(p64)
	sum, err2 := enc.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(sum, k.mac(string(payload))) {
		return session{}, false
	}
	parts := strings.Split(string(payload), "|")
	if len(parts) != 5 || parts[0] != sessionFormat {
		return session{}, false
	}
	exp, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return session{}, false
	}
	return session{Subject: parts[1], Prefix: parts[2], Expires: time.Unix(exp, 0), ID: parts[4]}, true
}

// csrfToken is the token of the forms of session id sid.
func (k sessionKeys) csrfToken(sid string) string {
	m := hmac.New(sha256.New, k.csrf)
	m.Write([]byte(sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func randomID() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random session id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// viewer is who is looking: a logged-in principal, or anyone when
// authentication is off.
type viewer struct {
	open      bool
	loggedIn  bool
	principal httpapi.Principal
	// sid is the id the request's CSRF tokens are bound to: the session's,
	// or the anonymous cookie's ("" when the browser has neither yet).
	sid string
}

// can reports whether the viewer holds scope.
func (v viewer) can(scope string) bool { return v.open || (v.loggedIn && v.principal.Grants(scope)) }

// Who names the viewer on the page.
func (v viewer) Who() string {
	switch {
	case v.open:
		return ""
	case v.principal.Admin:
		return "admin secret"
	}
	return "key " + v.principal.Prefix
}

// viewerOf reads r's session. With authentication off everyone is a
// viewer with every scope. A session whose key was revoked is no session.
func (s *server) viewerOf(ctx context.Context, r *http.Request) (viewer, error) {
	v := viewer{open: s.auth.Open()}
	if c, err := r.Cookie(anonCookie); err == nil && c.Value != "" {
		v.sid = c.Value
	}
	if v.open {
		return v, nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return v, nil
	}
	sess, ok := s.sessions.decode(c.Value, s.clock.Now())
	if !ok {
		return v, nil
	}
	if sess.Subject == adminSubject {
		v.loggedIn, v.principal, v.sid = true, httpapi.Principal{Admin: true}, sess.ID
		return v, nil
	}
	p, ok, err := s.auth.Key(ctx, sess.Prefix)
	if err != nil {
		return v, err
	}
	if !ok || p.KeyID != sess.Subject || p.Limited() {
		return v, nil // revoked (a key limited to queues never logs in)
	}
	v.loggedIn, v.principal, v.sid = true, p, sess.ID
	return v, nil
}

// ensureSID gives a browser without a session or an anonymous cookie
// one, so that the forms of the page about to be rendered carry a token.
func (s *server) ensureSID(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if v.sid != "" {
		return nil
	}
	id, err := randomID()
	if err != nil {
		return err
	}
	v.sid = id
	http.SetCookie(w, s.cookie(r, anonCookie, id, 0))
	return nil
}

// cookie is a cookie of the dashboard: HttpOnly, SameSite=Strict, Secure
// when the request came over TLS, for /ui/ only. maxAge 0 makes a session
// cookie, < 0 deletes it.
func (s *server) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: name, Value: value, Path: "/ui/", MaxAge: maxAge,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode,
	}
}

// loginPage: GET /ui/login.
func (s *server) loginPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.viewerOf(r.Context(), r)
	if err != nil {
		s.fail(w, r, &v, err)
		return
	}
	if v.open || v.loggedIn {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	s.renderLogin(w, r, v, http.StatusOK, "")
}

func (s *server) renderLogin(w http.ResponseWriter, r *http.Request, v viewer, status int, message string) {
	if err := s.ensureSID(w, r, &v); err != nil {
		s.fail(w, r, &v, err)
		return
	}
	s.render(w, r, v, status, "login", "Log in", loginData{Next: safeNext(r.FormValue("next")), Message: message})
}

type loginData struct {
	Next, Message string
}

// login: POST /ui/login, the key once. Its origin and token are checked
// as every action's; a key that cannot read is refused.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	v, err := s.viewerOf(r.Context(), r)
	if err != nil {
		s.fail(w, r, &v, err)
		return
	}
	if err := s.checkForm(r, v); err != nil {
		s.fail(w, r, &v, err)
		return
	}
	if v.open {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	p, ok, err := s.auth.Identify(r.Context(), strings.TrimSpace(r.PostFormValue("key")))
	switch {
	case err != nil:
		s.fail(w, r, &v, err)
		return
	case !ok:
		s.renderLogin(w, r, v, http.StatusUnauthorized, "That is not a valid key.")
		return
	case !p.Grants(scopeRead):
		s.renderLogin(w, r, v, http.StatusForbidden, "That key cannot read (it needs the read or admin scope).")
		return
	case p.Limited():
		s.renderLogin(w, r, v, http.StatusForbidden, "That key is limited to queues; the dashboard shows every queue, so it needs a key of every queue.")
		return
	}
	id, err := randomID()
	if err != nil {
		s.fail(w, r, &v, err)
		return
	}
	sess := session{Subject: adminSubject, Expires: s.clock.Now().Add(s.cfg.SessionTTL), ID: id}
	if !p.Admin {
		sess.Subject, sess.Prefix = p.KeyID, p.Prefix
	}
	http.SetCookie(w, s.cookie(r, sessionCookie, s.sessions.encode(sess), int(s.cfg.SessionTTL/time.Second)))
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout: POST /ui/logout.
func (s *server) logout(w http.ResponseWriter, r *http.Request, v viewer) error {
	http.SetCookie(w, s.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
	return nil
}

// safeNext is where to go after a login or an action: a path of the
// dashboard, never another site.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.IsAbs() || u.Host != "" || !strings.HasPrefix(u.Path, "/ui/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/ui/"
	}
	return u.RequestURI()
}

// errCrossOrigin refuses a form sent from another origin or without the
// session's token.
var errCrossOrigin = forbidden("this form did not come from this dashboard (a cross-site request, or its page is too old: reload it)")

// checkForm refuses a state-changing request that did not come from a
// page of this dashboard: the browser says it came from another origin
// (Sec-Fetch-Site, Origin), or its token is not the one of the
// browser's session.
func (s *server) checkForm(r *http.Request, v viewer) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return errCrossOrigin
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != originOf(r) {
		return errCrossOrigin
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		return badRequest("the form does not parse: %v", err)
	}
	token := r.PostFormValue("csrf")
	if v.sid == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.sessions.csrfToken(v.sid))) != 1 {
		return errCrossOrigin
	}
	return nil
}

// originOf is the origin r was sent to, as a browser writes it in Origin.
func originOf(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// page wraps a page's handler: it needs the read scope, and a browser
// without a session is sent to the login page.
func (s *server) page(h func(w http.ResponseWriter, r *http.Request, v viewer) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := s.viewerOf(r.Context(), r)
		if err != nil {
			s.fail(w, r, &v, err)
			return
		}
		if !v.open && !v.loggedIn {
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if !v.can(scopeRead) {
			s.fail(w, r, &v, forbidden("this key cannot read"))
			return
		}
		if err := h(w, r, v); err != nil {
			s.fail(w, r, &v, err)
		}
	}
}

// action wraps a state-changing handler: the origin and the token are
// checked first (a forged cross-site request is refused 403 before
// anything else), then the session and the scope the matching API route
// needs ("" for any logged-in viewer).
func (s *server) action(scope string, h func(w http.ResponseWriter, r *http.Request, v viewer) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := s.viewerOf(r.Context(), r)
		if err != nil {
			s.fail(w, r, &v, err)
			return
		}
		if err := s.checkForm(r, v); err != nil {
			s.fail(w, r, &v, err)
			return
		}
		if !v.open && !v.loggedIn {
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		}
		if scope != "" && !v.can(scope) {
			s.fail(w, r, &v, forbidden("this key lacks the %q scope this action needs", scope))
			return
		}
		if err := h(w, r, v); err != nil {
			s.fail(w, r, &v, err)
		}
	}
}

// done ends an action: back to the page it came from (the form's "back",
// a dashboard path) with a message.
func done(w http.ResponseWriter, r *http.Request, fallback, message string) error {
	back := safeNext(r.PostFormValue("back"))
	if r.PostFormValue("back") == "" {
		back = fallback
	}
	u, err := url.Parse(back)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("msg", message)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
	return nil
}
