package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

type workerKey struct{}

// workerOf authenticates a worker route: the bearer credential must be a
// worker's key (scope worker), and the worker must exist and be enabled
// (403 otherwise). It returns r with the worker in its context. Worker
// routes need a worker key even on an open server: the key says which
// worker calls.
func (a *authenticator) workerOf(r *http.Request) (*http.Request, error) {
	cred, ok := bearer(r)
	if !ok {
		return r, errUnauthorized
	}
	prefix, ok := splitKey(cred)
	if !ok {
		if !a.open && subtle.ConstantTimeCompare(hashKey(cred), a.secretHash) == 1 {
			return r, problem.Errorf(api.ProblemForbidden, "", "the worker routes need a worker's API key (POST /api/v1/workers), not the admin secret")
		}
		return r, errUnauthorized
	}
	rec, err := a.keys.find(r.Context(), prefix)
	if errors.Is(err, job.ErrNotFound) {
		return r, errUnauthorized
	}
	if err != nil {
		return r, fmt.Errorf("look up API key: %w", err)
	}
	if subtle.ConstantTimeCompare(hashKey(cred), rec.Hash) != 1 {
		return r, errUnauthorized
	}
	if rec.WorkerID == "" || !slices.Contains(rec.Scopes, string(scopeWorker)) {
		return r, problem.Errorf(api.ProblemForbidden, "", "the worker routes need a worker's API key (POST /api/v1/workers)")
	}
	// The key's lookup read its worker too (store.APIKey.Worker).
	w := rec.Worker
	if w == nil {
		return r, errUnauthorized // deleted with its keys a moment ago
	}
	if w.Disabled {
		return r, problem.Errorf(api.ProblemForbidden, "", "worker %s is disabled", w.ID)
	}
	return r.WithContext(context.WithValue(r.Context(), workerKey{}, w)), nil
}

// callingWorker is the worker workerOf found.
func callingWorker(r *http.Request) *store.Worker {
	w, _ := r.Context().Value(workerKey{}).(*store.Worker)
	return w
}
