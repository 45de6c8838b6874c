package job

import (
	"net/url"
	"strings"
)

// MaxCallbackURLBytes caps a job's callback URL.
const MaxCallbackURLBytes = 2048

// CheckCallbackURL returns a *ValidationError naming field unless s is ""
// (no callback) or an absolute http:// or https:// URL with a host, of at
// most MaxCallbackURLBytes, without control characters, user information
// or a fragment. Where it may lead is checked when it is called, at
// connect time (package webhook), not here.
func CheckCallbackURL(field, s string) error {
	if s == "" {
		return nil
	}
	if len(s) > MaxCallbackURLBytes {
		return Invalid(field, "is %d bytes, over the limit of %d", len(s), MaxCallbackURLBytes)
	}
	if err := CheckText(field, s); err != nil {
		return err
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' }) {
		return Invalid(field, "must not contain spaces or control characters")
	}
	u, err := url.Parse(s)
	if err != nil {
		return Invalid(field, "must be an absolute http:// or https:// URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return Invalid(field, "must be an absolute http:// or https:// URL, got scheme %q", u.Scheme)
	case u.Host == "" || u.Hostname() == "" || u.Opaque != "":
		return Invalid(field, "must be an absolute http:// or https:// URL with a host")
	case u.User != nil:
		return Invalid(field, "must not carry user information (user:password@)")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return Invalid(field, "must not have a fragment (#…)")
	}
	return nil
}
