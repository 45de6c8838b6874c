package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
)

// badRequest is a 400 problem naming field.
func badRequest(field, format string, args ...any) *problem.Error {
	return problem.Errorf(api.ProblemBadRequest, field, format, args...)
}

// writeError answers err as a problem (internal/problem: one mapping for
// the API and the gateway); the cause of an internal error goes to the
// log only.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	problem.WriteError(w, r, s.log, "http request failed", err)
}

// writeJSON answers v with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return nil
}

// marshal encodes v as one line of JSON ending in a newline, leaving <, >
// and & as they are (callers' args come back as they were sent).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode answer: %w", err)
	}
	return buf.Bytes(), nil
}

// errSlowBody answers a request whose body did not come within the
// server's read timeout (http.Server.ReadTimeout).
var errSlowBody = badRequest("", "the request body did not arrive within the server's read timeout")

// decodeBody reads r's JSON body into dst, strictly: one JSON value, no
// unknown members, no more than the configured limit, and nothing in any
// member that a store cannot keep (checkMembers). Its errors are 400 or
// 413 problems naming the field when the decoder tells which, 422
// problems naming the member that holds unstorable text, and, on an open
// server, 415 for a body not declared JSON (checkMediaType).
func (s *server) decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("", "the request body holds more than one JSON value")
	}
	return checkMembers(body)
}

// readBody reads r's body, as decodeBody does before it decodes it: no
// more than the configured limit (413), declared JSON on an open server
// (415), not empty (400).
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, problem.Errorf(api.ProblemTooLarge, "", "the request body is over the limit of %d bytes", tooLarge.Limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errSlowBody // before the context, which net/http cancels with it
		}
		if r.Context().Err() != nil {
			return nil, r.Context().Err()
		}
		return nil, badRequest("", "reading the request body: %v", err)
	}
	if len(body) > 0 {
		if err := s.checkMediaType(r); err != nil {
			return nil, err
		}
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest("", "the request body is empty; a JSON object is expected")
	}
	return body, nil
}

// checkMembers refuses, naming the member, a body one of whose top-level
// members holds what no store keeps (job.CheckJSON): NUL, a lone UTF-16
// surrogate or invalid UTF-8 in a string, or nesting too deep. Every
// string a caller or a worker sends is checked so, whether the handler
// keeps it as JSON (args, items, checkpoint, result) or as text (error,
// phase, names): encoding/json would hand a Go string a NUL that
// PostgreSQL refuses, and silently turn the rest into U+FFFD.
func checkMembers(body []byte) error {
	// What CheckJSON refuses lies within one string, or is a depth that
	// a member has one less of than the body: a clean body has clean
	// members. That is the usual case, told in one pass without decoding;
	// otherwise each member is checked, to name the one at fault.
	if job.CheckJSONText("body", body) == nil {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return nil // not an object: the typed decode accepted it as it is
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := job.CheckJSON(name, members[name]); err != nil {
			return err
		}
	}
	return nil
}

// decodeProblem turns an encoding/json error into a 400 problem, naming
// the field where the error says which.
func decodeProblem(err error) *problem.Error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return badRequest("", "malformed JSON at byte %d: %v", syntax.Offset, err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "malformed JSON: the body ends early")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("", "the body must be a JSON object, not %s", typ.Value)
		}
		if typ.Type == reflect.TypeFor[time.Duration]() {
			return badRequest(typ.Field, "%s must be a number of seconds or a Go duration such as \"90s\", got %s", typ.Field, typ.Value)
		}
		if typ.Type == reflect.TypeFor[uuid.UUID]() {
			return badRequest(typ.Field, "%s must be a UUID, got %s", typ.Field, typ.Value)
		}
		return badRequest(typ.Field, "%s has the wrong type: got %s, want %s", typ.Field, typ.Value, typ.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return badRequest(field, "unknown field %q", field)
	default:
		return badRequest("", "malformed JSON: %v", err)
	}
}
