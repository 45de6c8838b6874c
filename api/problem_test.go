package api_test

import (
	"net/http"
	"testing"

	"github.com/jobd/jobd/api"
)

// everyProblemType lists the type constants; the table must hold each
// once, and nothing else.
var everyProblemType = []string{
	api.ProblemBadRequest, api.ProblemValidation, api.ProblemTooLarge, api.ProblemUnauthorized,
	api.ProblemForbidden, api.ProblemNotFound, api.ProblemMethodNotAllowed, api.ProblemWrongState,
	api.ProblemDuplicate, api.ProblemLeaseLost, api.ProblemCanceled, api.ProblemInternal,
	api.ProblemUpstreamFailed, api.ProblemProcessorFailed, api.ProblemUnavailable, api.ProblemBusy,
	api.ProblemUpstreamTimeout, api.ProblemTaskTimeout, api.ProblemIdempotencyMismatch,
	api.ProblemTooManyRequests, api.ProblemUnsupportedMediaType,
}

func TestProblemKinds(t *testing.T) {
	kinds := api.ProblemKinds()
	if len(kinds) != len(everyProblemType) {
		t.Errorf("%d kinds in the table, %d type constants", len(kinds), len(everyProblemType))
	}
	seen := map[string]bool{}
	classes := map[api.ProblemClass]bool{}
	for _, k := range kinds {
		if seen[k.Type] {
			t.Errorf("%s is in the table twice", k.Type)
		}
		seen[k.Type] = true
		classes[k.Class] = true
		if k.Status < 400 || k.Status > 599 || http.StatusText(k.Status) == "" || k.Title == "" || k.Class == "" {
			t.Errorf("kind %+v: want an error status, a title and a class", k)
		}
		if got, ok := api.LookupProblem(k.Type); !ok || got != k {
			t.Errorf("LookupProblem(%s) = %+v, %v", k.Type, got, ok)
		}
		if got := api.ClassOf(k.Type, 200); got != k.Class {
			t.Errorf("ClassOf(%s) = %q, want %q: the type decides, not the status", k.Type, got, k.Class)
		}
		if k.Retryable() != (k.Class == api.ClassUnavailable) {
			t.Errorf("%s: Retryable %v", k.Type, k.Retryable())
		}
	}
	for _, typ := range everyProblemType {
		if !seen[typ] {
			t.Errorf("%s is not in the table", typ)
		}
	}
	for _, c := range []api.ProblemClass{api.ClassInvalid, api.ClassUnauthorized, api.ClassForbidden, api.ClassNotFound,
		api.ClassConflict, api.ClassUnavailable, api.ClassUpstream, api.ClassPending, api.ClassInternal} {
		if !classes[c] {
			t.Errorf("no kind of class %s", c)
		}
	}
	if _, ok := api.LookupProblem("https://example.com/other"); ok {
		t.Error("an unknown type was found")
	}
	// The kinds the issue named apart stay apart.
	busy, _ := api.LookupProblem(api.ProblemBusy)
	down, _ := api.LookupProblem(api.ProblemUnavailable)
	proc, _ := api.LookupProblem(api.ProblemProcessorFailed)
	dup, _ := api.LookupProblem(api.ProblemDuplicate)
	if busy.Status != 503 || down.Status != 503 || proc.Status != 502 || proc.Retryable() || dup.Status != 409 {
		t.Errorf("busy %+v, unavailable %+v, processor failed %+v, duplicate %+v", busy, down, proc, dup)
	}
}

// TestClassOfStatus: an answer without a known problem type is classified
// by its status alone.
func TestClassOfStatus(t *testing.T) {
	for status, want := range map[int]api.ProblemClass{
		400: api.ClassInvalid, 413: api.ClassInvalid, 415: api.ClassInvalid, 422: api.ClassInvalid, 401: api.ClassUnauthorized,
		403: api.ClassForbidden, 404: api.ClassNotFound, 409: api.ClassConflict,
		429: api.ClassUnavailable, 502: api.ClassUnavailable, 503: api.ClassUnavailable, 504: api.ClassUnavailable,
		500: "", 418: "", 200: "",
	} {
		for _, typ := range []string{"", "about:blank", "https://example.com/other"} {
			if got := api.ClassOf(typ, status); got != want {
				t.Errorf("ClassOf(%q, %d) = %q, want %q", typ, status, got, want)
			}
		}
	}
}
