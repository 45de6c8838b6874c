package job

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes caps a job's lock, partition and idempotency keys.
const MaxKeyBytes = 255

// MaxJSONDepth is the deepest nesting of arrays and objects a stored JSON
// value may have. The stores keep deeper values, but jobd's answers embed
// them a few levels further down (a job's args inside a list page, an
// event, a claim) and JSON decoders stop at a depth: encoding/json at
// 10 000, SQLite's JSON functions at 1 000, Python's json near its
// recursion limit of 1 000. A value jobd keeps must come back readable.
const MaxJSONDepth = 512

// CheckJSON returns a *ValidationError naming field unless raw is empty
// (none) or JSON that every driver can store as it is: well-formed, valid
// UTF-8, no \u0000 escape
// and no escaped UTF-16 surrogate without its pair in any string (the
// text PostgreSQL's jsonb refuses, and encoding/json would silently turn
// into U+FFFD), nested at most MaxJSONDepth deep. It is the one check of
// every JSON value a caller or a worker hands jobd to keep: job args,
// progress items, checkpoints, results, metadata, and each member of a
// request body.
func CheckJSON(field string, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	if !json.Valid(raw) {
		return Invalid(field, "must be JSON")
	}
	return CheckJSONText(field, raw)
}

// CheckJSONText is CheckJSON for text already known to be valid JSON (a
// body encoding/json has decoded): the checks of what no store keeps,
// without parsing it again.
func CheckJSONText(field string, raw []byte) error {
	if !utf8.Valid(raw) {
		return Invalid(field, "must be valid UTF-8")
	}
	if reason := jsonTextProblem(raw); reason != "" {
		return Invalid(field, "%s", reason)
	}
	return nil
}

// CheckText returns a *ValidationError naming field unless s can be
// stored in a text column of every driver: valid UTF-8 without NUL.
func CheckText(field, s string) error {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return Invalid(field, "must be valid UTF-8 without NUL characters")
	}
	return nil
}

// CutText returns s cut to at most n bytes on a rune boundary: the cut
// never splits a character, so valid UTF-8 stays valid.
func CutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// jsonTextProblem scans JSON text for what no store keeps: a \u0000
// escape, an escaped surrogate without its pair, nesting deeper than
// MaxJSONDepth. It returns why, or "" when there is nothing.
func jsonTextProblem(b []byte) string {
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !inString {
			switch c {
			case '"':
				inString = true
			case '[', '{':
				if depth++; depth > MaxJSONDepth {
					return "must not nest arrays and objects more than " + strconv.Itoa(MaxJSONDepth) + " deep"
				}
			case ']', '}':
				depth--
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			i++
			if i >= len(b) || b[i] != 'u' {
				continue // a one-character escape
			}
			r, ok := hex4(b, i+1)
			i += 4
			switch {
			case !ok:
				return "holds a malformed \\u escape"
			case r == 0:
				return "must not contain \\u0000 (NUL)"
			case r >= 0xdc00 && r <= 0xdfff:
				return "must not contain a lone UTF-16 surrogate (\\u" + string(b[i-3:i+1]) + ")"
			case r >= 0xd800 && r <= 0xdbff:
				// A high surrogate must be followed by an escaped low one.
				lo, ok := rune(0), i+2 < len(b) && b[i+1] == '\\' && b[i+2] == 'u'
				if ok {
					lo, ok = hex4(b, i+3)
				}
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return "must not contain a lone UTF-16 surrogate (\\u" + string(b[i-3:i+1]) + ")"
				}
				i += 6
			}
		}
	}
	return ""
}

// hex4 reads the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}
