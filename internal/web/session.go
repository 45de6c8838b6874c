package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The cookies. The session cookie holds a random token of 256 bits and
// nothing else; the session itself is a row of the store (store.Session,
// under the token's SHA-256), which every node sharing the database
// reads: a logout deletes it, so the cookie is refused everywhere at once,
// even replayed. A session is the admin secret's or an API key's. The
// admin secret's row holds an HMAC of the token under a key derived from
// the secret (sessionKeys.tag): a node started with another secret
// refuses it, so rotating the secret ends its sessions. A key's row names
// the key, which the lookup joins: a revoked key's sessions end at once,
// and each request takes the key's scopes as they are now. The key itself
// is never put in a cookie. Each request costs one lookup of its session,
// shared with the requests of the same session in flight (flight.Group).
// The anonymous cookie holds only a random id, that of the CSRF tokens of
// a browser without a session (the login form; every form when
// authentication is off).
const (
	sessionCookie = "jobd_session"
	anonCookie    = "jobd_anon"
	// tokenPrefix starts a session cookie's value, then the token in
	// unpadded base64url.
	tokenPrefix = "v2."
	tokenBytes  = 32
	// sessionLookupTimeout bounds one shared lookup of a session.
	sessionLookupTimeout = 10 * time.Second
)

// The scopes the dashboard's actions need: those of the matching API
// routes.
const (
	scopeRead   = api.ScopeRead
	scopeSubmit = api.ScopeSubmit
	scopeAdmin  = api.ScopeAdmin
	scopeCancel = api.ScopeCancel
)

// sessionKeys are the keys derived from the admin secret: one makes the
// CSRF tokens, one binds the admin secret's sessions to the secret.
type sessionKeys struct {
	csrf, admin []byte
}

// deriveKeys derives the keys with HMAC-SHA256 of the secret over fixed
// labels, so that neither key is the secret nor reveals it.
func deriveKeys(secret string) sessionKeys {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	return sessionKeys{csrf: derive("jobd dashboard csrf token v1"), admin: derive("jobd dashboard admin session v2")}
}

// tag binds the admin secret's session of token to the secret. The
// store keeps the tag and the token's hash, never the token, so a reader
// of the database cannot test guesses of the secret against it.
func (k sessionKeys) tag(token []byte) []byte {
	m := hmac.New(sha256.New, k.admin)
	m.Write(token)
	return m.Sum(nil)
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

// newToken returns a fresh session token and its cookie value.
func newToken() (token []byte, cookie string, err error) {
	token = make([]byte, tokenBytes)
	if _, err := rand.Read(token); err != nil {
		return nil, "", fmt.Errorf("random session token: %w", err)
	}
	return token, tokenPrefix + base64.RawURLEncoding.EncodeToString(token), nil
}

// parseToken reads a session cookie's token; false for anything else,
// which is then no session without a lookup.
func parseToken(cookie string) ([]byte, bool) {
	enc, ok := strings.CutPrefix(cookie, tokenPrefix)
	if !ok {
		return nil, false
	}
	token, err := base64.RawURLEncoding.DecodeString(enc)
	return token, err == nil && len(token) == tokenBytes
}

// sessionID is the key of a session's shared lookup: its store id.
type sessionID [sha256.Size]byte

// lookupSession is the shared lookup of a session (server.sessions).
func (s *server) lookupSession(ctx context.Context, id sessionID) (*store.Session, error) {
	return s.store.SessionGet(ctx, id[:])
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
// viewer with every scope. A session that was ended (a logout), has
// expired, belongs to another admin secret or whose key was revoked is
// no session.
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
	token, ok := parseToken(c.Value)
	if !ok {
		return v, nil
	}
	sess, err := s.sessions.Do(ctx, sessionID(store.SessionID(token)))
	switch {
	case errors.Is(err, job.ErrNotFound):
		return v, nil
	case err != nil:
		return v, fmt.Errorf("look up the dashboard session: %w", err)
	case sess.Key != nil:
		p := httpapi.KeyPrincipal(sess.Key)
		if p.Limited() {
			return v, nil // a key limited to queues never logs in
		}
		v.loggedIn, v.principal, v.sid = true, p, c.Value
	case hmac.Equal(sess.SecretTag, s.keys.tag(token)):
		v.loggedIn, v.principal, v.sid = true, httpapi.Principal{Admin: true}, c.Value
	}
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
// as every action's; a client that failed too often must wait (429, with
// Retry-After; throttle.go); a key that cannot read is refused.
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
	client := clientOf(r)
	if wait := s.logins.begin(client); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.renderLogin(w, r, v, http.StatusTooManyRequests,
			fmt.Sprintf("Too many failed logins from your address: try again in %d s.", secs))
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
	}
	s.logins.succeeded(client) // a valid credential, if not one that may read
	switch {
	case !p.Grants(scopeRead):
		s.renderLogin(w, r, v, http.StatusForbidden, "That key cannot read (it needs the read or admin scope).")
		return
	case p.Limited():
		s.renderLogin(w, r, v, http.StatusForbidden, "That key is limited to queues; the dashboard shows every queue, so it needs a key of every queue.")
		return
	}
	token, cookie, err := newToken()
	if err != nil {
		s.fail(w, r, &v, err)
		return
	}
	sess := store.Session{ID: store.SessionID(token)}
	if p.Admin {
		sess.SecretTag = s.keys.tag(token)
	} else {
		sess.KeyID = p.KeyID
	}
	if _, err := s.store.SessionCreate(r.Context(), sess, s.cfg.SessionTTL); err != nil {
		s.fail(w, r, &v, err)
		return
	}
	http.SetCookie(w, s.cookie(r, sessionCookie, cookie, int(s.cfg.SessionTTL/time.Second)))
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout: POST /ui/logout. It deletes the session from the store, so
// that its cookie, replayed, is refused by every node; a store that fails
// fails the logout (the session would live on).
func (s *server) logout(w http.ResponseWriter, r *http.Request, v viewer) error {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if token, ok := parseToken(c.Value); ok {
			err := s.store.SessionDelete(r.Context(), store.SessionID(token))
			if err != nil && !errors.Is(err, job.ErrNotFound) {
				return fmt.Errorf("end the dashboard session: %w", err)
			}
		}
	}
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
	if v.sid == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.keys.csrfToken(v.sid))) != 1 {
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
