package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// List sizes of GET done / GET pending.
const (
	// maxList is the most ids one list returns, and the default.
	maxList = 1000
	// deleteBatch is the jobs one store call of a DELETE removes.
	deleteBatch = 1000
)

// farFuture is the cutoff of DELETE all: every finished job is before it.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// compat serves /_api/job/...: the result routes, with the scope each
// needs checked first, as the API checks those of /api/v1/async/. Its
// problems carry ArangoDB's error members too (writeArangoError).
func (g *Gateway) compat(w http.ResponseWriter, r *http.Request) {
	scope := api.ScopeRead
	switch {
	case r.Method == http.MethodDelete, r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/cancel"):
		scope = api.ScopeAdmin
	}
	if err := g.authorize(r, scope); err != nil {
		g.writeArangoError(w, r, err)
		return
	}
	g.results(w, r, "/_api/job", g.writeArangoError)
}

// results routes a result request under prefix: GET, PUT and DELETE of
// the ArangoDB /_api/job contract. writeError answers its errors.
func (g *Gateway) results(w http.ResponseWriter, r *http.Request, prefix string, writeError func(http.ResponseWriter, *http.Request, error)) {
	rest := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, prefix), "/")
	var err error
	switch r.Method {
	case http.MethodGet:
		err = g.get(w, r, rest)
	case http.MethodPut:
		err = g.put(w, r, rest)
	case http.MethodDelete:
		err = g.delete(w, r, rest)
	default:
		w.Header().Set("Allow", "GET, PUT, DELETE")
		err = problemf(api.ProblemMethodNotAllowed, "", "%s is not allowed on %s", r.Method, r.URL.Path)
	}
	if err != nil {
		writeError(w, r, err)
	}
}

var (
	errNoID      = problemf(api.ProblemBadRequest, "id", "no async request id given")
	errNoRequest = problemf(api.ProblemNotFound, "", "no such async request (unknown, already fetched or deleted)")
)

// get: GET {id} (200 done, 204 pending), GET done, GET pending.
func (g *Gateway) get(w http.ResponseWriter, r *http.Request, rest string) error {
	switch rest {
	case "":
		return errNoID
	case "done":
		return g.list(w, r, false)
	case "pending":
		return g.list(w, r, true)
	}
	id, err := uuid.Parse(rest)
	if err != nil || strings.Contains(rest, "/") {
		return errNoRequest // as for any unknown id, by ArangoDB's contract
	}
	j, err := g.lookup(r, id)
	if err != nil {
		return err
	}
	if !j.State.Final() {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	return nil
}

// lookup returns the gateway job id, or errNoRequest.
func (g *Gateway) lookup(r *http.Request, id uuid.UUID) (*job.Job, error) {
	j, err := g.store.JobGet(r.Context(), id)
	if errors.Is(err, job.ErrNotFound) || (err == nil && !ours(j)) {
		return nil, errNoRequest
	}
	return j, err
}

// RequestList is the listing of the async requests, pending (queued or
// running) or done (a result to fetch), oldest first: the store.JobList
// parameters GET pending and GET done read, for every reader of them.
// Reading them consumes nothing; only a fetch (PUT) or a delete does.
// Fire-and-forget requests (KindForget) are not listed, as ArangoDB does
// not list them: nobody can fetch their result.
func RequestList(pending bool) store.ListParams {
	states := []job.State{job.StateSucceeded, job.StateFailed, job.StateCanceled}
	if pending {
		states = []job.State{job.StateQueued, job.StateRunning}
	}
	return store.ListParams{Queue: Queue, Kind: Kind, States: states, OldestFirst: true}
}

// list: the ids of the gateway jobs pending or done, oldest first, at most
// ?count= of them; X-Total-Count says how many there are.
func (g *Gateway) list(w http.ResponseWriter, r *http.Request, pending bool) error {
	count := maxList
	if v := r.URL.Query().Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return problemf(api.ProblemBadRequest, "count", "count must be a positive integer, got %q", v)
		}
		count = min(n, maxList)
	}
	params := RequestList(pending)
	params.Limit = count
	res, err := g.store.JobList(r.Context(), params)
	if err != nil {
		return err
	}
	ids := make([]string, len(res.Jobs))
	for i, j := range res.Jobs {
		ids[i] = j.ID.String()
	}
	w.Header().Set("X-Total-Count", strconv.FormatInt(res.Total, 10))
	writeJSON(w, http.StatusOK, "application/json", ids)
	return nil
}

// put: PUT {id} (fetch the result once) and PUT {id}/cancel.
func (g *Gateway) put(w http.ResponseWriter, r *http.Request, rest string) error {
	if rest == "" {
		return errNoID
	}
	raw, cancel := strings.CutSuffix(rest, "/cancel")
	id, err := uuid.Parse(raw)
	if err != nil || strings.Contains(raw, "/") {
		return errNoRequest
	}
	if cancel {
		return g.cancel(w, r, id)
	}
	j, err := g.lookup(r, id)
	if err != nil {
		return err
	}
	if !j.State.Final() {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	j, err = g.store.JobTake(r.Context(), id)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return errNoRequest // another fetch got it first
	case errors.Is(err, job.ErrWrongState):
		w.WriteHeader(http.StatusNoContent) // an operator's retry queued it again
		return nil
	case err != nil:
		return err
	}
	return g.replay(w, j)
}

// replay answers a taken job: the upstream's response with X-Async-Id
// when it succeeded, otherwise jobd's own problem (without the header).
func (g *Gateway) replay(w http.ResponseWriter, j *job.Job) error {
	switch j.State {
	case job.StateFailed:
		return problemf(api.ProblemUpstreamFailed, "", "the upstream gave no final answer: %s", j.LastError)
	case job.StateCanceled:
		return problemf(api.ProblemCanceled, "", "the async request was canceled before the upstream answered")
	}
	var res Response
	if err := json.Unmarshal(j.Result, &res); err != nil || res.Status < 100 || res.Status > 999 {
		return fmt.Errorf("async request %s: its stored response does not decode: %v", j.ID, err)
	}
	h := w.Header()
	for name, vs := range res.Header {
		h[name] = vs
	}
	id := j.ID.String()
	h.Set(headerAsyncID, id)
	h.Set(headerArangoAsyncID, id)
	h.Set("Content-Length", strconv.Itoa(len(res.Body)))
	w.WriteHeader(res.Status)
	_, _ = w.Write(res.Body)
	return nil
}

// cancel: PUT {id}/cancel. A queued request is canceled at once; a
// running one is asked to stop: the engine running it, on any node, hears
// of it at once (store.Store.Listen) and cancels the handler's context,
// which aborts the upstream call.
func (g *Gateway) cancel(w http.ResponseWriter, r *http.Request, id uuid.UUID) error {
	if _, err := g.lookup(r, id); err != nil {
		return err
	}
	_, err := g.store.JobCancel(r.Context(), id)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return errNoRequest
	case errors.Is(err, job.ErrWrongState):
		return problemf(api.ProblemWrongState, "", "the async request is already done; fetch or delete its result")
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]bool{"result": true})
	return nil
}

// delete: DELETE all, DELETE expired?stamp=UNIX, DELETE {id}. Only
// results go: queued and running requests are left alone.
func (g *Gateway) delete(w http.ResponseWriter, r *http.Request, rest string) error {
	var err error
	switch rest {
	case "":
		return problemf(api.ProblemBadRequest, "type", "give all, expired or an async request id")
	case "all":
		err = g.deleteBefore(r, farFuture)
	case "expired":
		v := r.URL.Query().Get("stamp")
		stamp, perr := strconv.ParseFloat(v, 64)
		if v == "" || perr != nil || math.IsNaN(stamp) || math.IsInf(stamp, 0) || stamp < 0 || stamp > 1e11 {
			return problemf(api.ProblemBadRequest, "stamp", "DELETE expired needs stamp, a UNIX time in seconds, got %q", v)
		}
		sec, frac := math.Modf(stamp)
		err = g.deleteBefore(r, time.Unix(int64(sec), int64(frac*1e9)))
	default:
		err = g.deleteOne(r, rest)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]bool{"result": true})
	return nil
}

// deleteBefore removes the results that came before cutoff.
func (g *Gateway) deleteBefore(r *http.Request, cutoff time.Time) error {
	for {
		n, err := g.store.JobPruneQueue(r.Context(), Queue, cutoff, deleteBatch)
		if err != nil || n < deleteBatch {
			return err
		}
	}
}

// deleteOne removes one result; a pending request has none yet (409).
func (g *Gateway) deleteOne(r *http.Request, rest string) error {
	id, err := uuid.Parse(rest)
	if err != nil || strings.Contains(rest, "/") {
		return errNoRequest
	}
	return g.DeleteResult(r.Context(), id)
}

// DeleteResult removes the result of the async request id, as DELETE
// /api/v1/async/{id} does: a 404 problem when there is no such request
// (or its result was fetched or deleted), a 409 one while it is pending
// (it has no result yet).
func (g *Gateway) DeleteResult(ctx context.Context, id uuid.UUID) error {
	j, err := g.store.JobGet(ctx, id)
	if errors.Is(err, job.ErrNotFound) || (err == nil && !ours(j)) {
		return errNoRequest
	}
	if err != nil {
		return err
	}
	_, err = g.store.JobTake(ctx, id)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return errNoRequest
	case errors.Is(err, job.ErrWrongState):
		return problemf(api.ProblemWrongState, "", "the async request is still pending: it has no result to delete yet (cancel it with PUT %s/cancel)", id)
	}
	return err
}
