// Package redact keeps credentials out of jobd's logs, in one place: a
// slog.Handler that masks, in every message and attribute of every
// record (errors from the database driver and the HTTP client included,
// which may repeat a URL or a DSN), the secret values it was told of (the
// admin secret, URL passwords), and anything shaped like a credential
// whatever its value (jobd API keys, bearer tokens, the password of any
// URL), and that drops the values of attributes named like credentials
// (authorization, password, secret, token...). Every logger jobd builds
// goes through it. A secret jobd cannot know the shape or the value of
// (a credential an upstream echoes in an error body, say) it cannot mask:
// jobd keeps those out of its messages where they arise (gateway.scrub).
package redact

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mask replaces what is redacted.
const Mask = "[REDACTED]"

// minSecret is the shortest value Secrets masks: a shorter one would mask
// ordinary words.
const minSecret = 4

// Secrets is the set of secret values to mask. Its zero value is empty
// and ready; it is safe for concurrent use.
type Secrets struct {
	mu       sync.RWMutex
	values   []string
	replacer *strings.Replacer
}

// Add adds secret values; values shorter than 4 bytes are ignored.
func (s *Secrets) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) >= minSecret && !slices.Contains(s.values, v) {
			s.values = append(s.values, v)
		}
	}
	// Longest first, so that a secret containing another is masked whole.
	sorted := slices.Clone(s.values)
	slices.SortFunc(sorted, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(sorted))
	for _, v := range sorted {
		pairs = append(pairs, v, Mask)
		if q := url.QueryEscape(v); q != v {
			pairs = append(pairs, q, Mask)
		}
	}
	s.replacer = strings.NewReplacer(pairs...)
}

// Values returns the secrets of the set, in the order they were added.
func (s *Secrets) Values() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.values)
}

// AddURL adds the credentials of a URL (user information, its password)
// to the set; a URL without any adds nothing.
func (s *Secrets) AddURL(raw string) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		// A key=value DSN: its password= value.
		if m := dsnPassword.FindStringSubmatch(raw); m != nil {
			s.Add(strings.Trim(m[1], "'"))
		}
		return
	}
	if p, ok := u.User.Password(); ok {
		s.Add(p, url.PathEscape(p))
	}
}

// Redact returns text with every secret and credential masked.
func (s *Secrets) Redact(text string) string {
	if s != nil {
		s.mu.RLock()
		r := s.replacer
		s.mu.RUnlock()
		if r != nil {
			text = r.Replace(text)
		}
	}
	return redactShapes(text)
}

var (
	// apiKey is a jobd API key (httpapi's key format), known or not.
	apiKey = regexp.MustCompile(`jobd_[0-9a-fA-F]{12}_[0-9a-fA-F]{16,}`)
	// bearer is a bearer credential ("Authorization: Bearer X").
	bearer = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]+`)
	// queryCredential is a credential in a query string or a key=value
	// list.
	queryCredential = regexp.MustCompile(`(?i)\b(access_token|token|api_key|apikey|secret|password)=[^&\s]+`)
	// urlPassword is the password of a URL's user information.
	urlPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*):[^/\s@]*@`)
	// dsnPassword is password=... in a key=value DSN.
	dsnPassword = regexp.MustCompile(`(?i)\bpassword\s*=\s*('[^']*'|\S+)`)
	// webhookSecret is a webhook signing secret (Standard Webhooks'
	// "whsec_" and base64), known or not.
	webhookSecret = regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`)
)

func redactShapes(text string) string {
	if !strings.ContainsAny(text, "_:=") && !strings.Contains(text, "earer") && !strings.Contains(text, "EARER") {
		return text
	}
	text = apiKey.ReplaceAllString(text, Mask)
	text = webhookSecret.ReplaceAllString(text, Mask)
	text = bearer.ReplaceAllString(text, "${1}"+Mask)
	text = urlPassword.ReplaceAllString(text, "${1}:"+Mask+"@")
	text = dsnPassword.ReplaceAllString(text, "password="+Mask)
	text = queryCredential.ReplaceAllString(text, "${1}="+Mask)
	return text
}

// sensitiveKey reports whether an attribute's name says its value is a
// credential.
func sensitiveKey(key string) bool {
	k := strings.ToLower(key)
	for _, word := range []string{"authorization", "password", "passwd", "secret", "token", "api_key", "apikey", "credential", "cookie"} {
		if strings.Contains(k, word) {
			return true
		}
	}
	return false
}

// Handler is a slog.Handler that redacts every record before its inner
// handler sees it.
type Handler struct {
	inner   slog.Handler
	secrets *Secrets
}

// NewHandler returns a Handler masking secrets (which may grow later)
// before inner.
func NewHandler(inner slog.Handler, secrets *Secrets) *Handler {
	return &Handler{inner: inner, secrets: secrets}
}

// Enabled reports whether the inner handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle redacts r's message and attributes and hands it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.secrets.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// WithAttrs redacts attrs once and returns a handler that adds them.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &Handler{inner: h.inner.WithAttrs(clean), secrets: h.secrets}
}

// WithGroup returns a handler whose attributes go in group name.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name), secrets: h.secrets}
}

// attr returns a with its value redacted.
func (h *Handler) attr(a slog.Attr) slog.Attr {
	if sensitiveKey(a.Key) {
		return slog.String(a.Key, Mask)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.secrets.Redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.secrets.Redact(x.Error()))
		case fmt.Stringer:
			return slog.String(a.Key, h.secrets.Redact(x.String()))
		case []byte:
			return slog.String(a.Key, h.secrets.Redact(string(x)))
		default:
			return slog.String(a.Key, h.secrets.Redact(fmt.Sprintf("%+v", x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
