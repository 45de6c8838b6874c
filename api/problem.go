package api

import (
	"net/http"
	"slices"
)

// The stable type URIs of the problems jobd answers with: the API's, the
// async gateway's and the process routes'. Each names one kind of error;
// ProblemKinds gives its status, title and class.
const (
	// ProblemBadRequest (400): malformed JSON, an unknown field or query
	// parameter, a value of the wrong type or syntax.
	ProblemBadRequest = "https://jobd.dev/problems/bad-request"
	// ProblemValidation (422): well-formed input that breaks a rule
	// (a missing kind, a negative priority, an unknown scope).
	ProblemValidation = "https://jobd.dev/problems/validation"
	// ProblemTooLarge (413): the body is over the server's limit.
	ProblemTooLarge = "https://jobd.dev/problems/too-large"
	// ProblemUnauthorized (401): missing or wrong credentials.
	ProblemUnauthorized = "https://jobd.dev/problems/unauthorized"
	// ProblemForbidden (403): valid credentials without the needed scope.
	ProblemForbidden = "https://jobd.dev/problems/forbidden"
	// ProblemNotFound (404): no such job, key, process or route.
	ProblemNotFound = "https://jobd.dev/problems/not-found"
	// ProblemMethodNotAllowed (405): the route exists for other methods.
	ProblemMethodNotAllowed = "https://jobd.dev/problems/method-not-allowed"
	// ProblemWrongState (409): the state of the job (or process, or async
	// request) does not allow the operation: cancel of a finished job,
	// retry of a queued one, a call of a process in error.
	ProblemWrongState = "https://jobd.dev/problems/wrong-state"
	// ProblemDuplicate (409): the operation would duplicate something that
	// exists: a retry would make an active twin of a job.
	ProblemDuplicate = "https://jobd.dev/problems/duplicate"
	// ProblemLeaseLost (409): a worker's lease token is no longer the
	// job's current one (the lease expired and the job was claimed again,
	// or the job was canceled or finished); nothing was written.
	ProblemLeaseLost = "https://jobd.dev/problems/lease-lost"
	// ProblemCanceled (410): the async request was canceled before the
	// upstream answered; there is no response to return.
	ProblemCanceled = "https://jobd.dev/problems/canceled"
	// ProblemInternal (500): a server fault; the detail is in its log.
	ProblemInternal = "https://jobd.dev/problems/internal"
	// ProblemUpstreamFailed (502): the async gateway's upstream gave no
	// usable answer: a connection error, a 5xx on every attempt, or a
	// response over the size limit.
	ProblemUpstreamFailed = "https://jobd.dev/problems/upstream-failed"
	// ProblemProcessorFailed (502): a process's processor failed (non-2xx,
	// a bad answer, its timeout); the process is in error until a repair
	// succeeds.
	ProblemProcessorFailed = "https://jobd.dev/problems/processor-failed"
	// ProblemUnavailable (503): the database does not answer; retry after
	// the Retry-After delay.
	ProblemUnavailable = "https://jobd.dev/problems/unavailable"
	// ProblemBusy (503): too many async requests are pending (back-
	// pressure); nothing was queued. Retry after the Retry-After delay.
	ProblemBusy = "https://jobd.dev/problems/busy"
	// ProblemUpstreamTimeout (504): a synchronous call through the gateway
	// to its upstream did not answer within its timeout.
	ProblemUpstreamTimeout = "https://jobd.dev/problems/upstream-timeout"
	// ProblemTaskTimeout (504): a process task was still queued or running
	// when the call's ?timeout= passed. It is not lost: the answer, a
	// ProcessTaskTimeout, names the task, a job whose outcome can be read
	// later.
	ProblemTaskTimeout = "https://jobd.dev/problems/task-timeout"
	// ProblemIdempotencyMismatch (422): the idempotency key was used
	// before with a different request (another queue, kind, args or
	// other member that decides the job). Nothing was written, and the
	// answer says nothing of the job the key names: send the same request
	// again, or use a new key.
	ProblemIdempotencyMismatch = "https://jobd.dev/problems/idempotency-mismatch"
	// ProblemTooManyRequests (429): a cap on what one caller or one node
	// may hold open at once was reached (the event streams of
	// GET /api/v1/jobs/{id}/stream); retry after the Retry-After delay,
	// once one of them has ended.
	ProblemTooManyRequests = "https://jobd.dev/problems/too-many-requests"
	// ProblemUnsupportedMediaType (415): a route that reads a JSON body
	// got a body of another Content-Type (an open server refuses it, so
	// that a web page cannot send one; send application/json).
	ProblemUnsupportedMediaType = "https://jobd.dev/problems/unsupported-media-type"
)

// ProblemContentType is the media type of a Problem body.
const ProblemContentType = "application/problem+json"

// ProblemClass says what a caller can do about a problem. The Go client
// classifies its errors by it.
type ProblemClass string

// The classes of problems.
const (
	// ClassInvalid: the request is wrong; the same request fails again.
	ClassInvalid ProblemClass = "invalid"
	// ClassUnauthorized: present a valid credential.
	ClassUnauthorized ProblemClass = "unauthorized"
	// ClassForbidden: present a credential with the needed scope.
	ClassForbidden ProblemClass = "forbidden"
	// ClassNotFound: there is no such thing.
	ClassNotFound ProblemClass = "not-found"
	// ClassConflict: the state of what the request names does not allow
	// it now (a final job, a process in error, a lost lease).
	ClassConflict ProblemClass = "conflict"
	// ClassUnavailable: transient; the same request may succeed after the
	// answer's Retry-After.
	ClassUnavailable ProblemClass = "unavailable"
	// ClassUpstream: a service jobd called for the request (an upstream,
	// a processor) failed. Not transient: jobd already retried what it
	// could, and a process is left in error.
	ClassUpstream ProblemClass = "upstream"
	// ClassPending: the work goes on; read its outcome later.
	ClassPending ProblemClass = "pending"
	// ClassInternal: a fault of the server.
	ClassInternal ProblemClass = "internal"
)

// ProblemKind is one kind of error answer: its stable type URI, the HTTP
// status and title it is answered with, and its class.
type ProblemKind struct {
	Type   string
	Status int
	Title  string
	Class  ProblemClass
}

// Retryable reports whether the same request may succeed if sent again
// later, unchanged (after the answer's Retry-After).
func (k ProblemKind) Retryable() bool { return k.Class == ClassUnavailable }

// problemKinds is the one table of problem kinds: the server answers by
// it and the client classifies by it.
var problemKinds = []ProblemKind{
	{ProblemBadRequest, http.StatusBadRequest, "Bad request", ClassInvalid},
	{ProblemValidation, http.StatusUnprocessableEntity, "Invalid input", ClassInvalid},
	{ProblemTooLarge, http.StatusRequestEntityTooLarge, "Request body too large", ClassInvalid},
	{ProblemUnauthorized, http.StatusUnauthorized, "Unauthorized", ClassUnauthorized},
	{ProblemForbidden, http.StatusForbidden, "Forbidden", ClassForbidden},
	{ProblemNotFound, http.StatusNotFound, "Not found", ClassNotFound},
	{ProblemMethodNotAllowed, http.StatusMethodNotAllowed, "Method not allowed", ClassInvalid},
	{ProblemWrongState, http.StatusConflict, "Wrong state", ClassConflict},
	{ProblemDuplicate, http.StatusConflict, "Duplicate", ClassConflict},
	{ProblemLeaseLost, http.StatusConflict, "Lease lost", ClassConflict},
	{ProblemCanceled, http.StatusGone, "Canceled", ClassConflict},
	{ProblemInternal, http.StatusInternalServerError, "Internal server error", ClassInternal},
	{ProblemUpstreamFailed, http.StatusBadGateway, "Upstream failed", ClassUpstream},
	{ProblemProcessorFailed, http.StatusBadGateway, "Processor failed", ClassUpstream},
	{ProblemUnavailable, http.StatusServiceUnavailable, "Service unavailable", ClassUnavailable},
	{ProblemBusy, http.StatusServiceUnavailable, "Too many pending requests", ClassUnavailable},
	{ProblemUpstreamTimeout, http.StatusGatewayTimeout, "Upstream timeout", ClassUpstream},
	{ProblemTaskTimeout, http.StatusGatewayTimeout, "Task still pending", ClassPending},
	{ProblemIdempotencyMismatch, http.StatusUnprocessableEntity, "Idempotency key reused", ClassInvalid},
	{ProblemTooManyRequests, http.StatusTooManyRequests, "Too many requests", ClassUnavailable},
	{ProblemUnsupportedMediaType, http.StatusUnsupportedMediaType, "Unsupported media type", ClassInvalid},
}

// ProblemKinds returns every kind of problem jobd answers with, one per
// type URI.
func ProblemKinds() []ProblemKind { return slices.Clone(problemKinds) }

// LookupProblem returns the kind of a problem type URI; false for a type
// jobd does not define.
func LookupProblem(typ string) (ProblemKind, bool) {
	for _, k := range problemKinds {
		if k.Type == typ {
			return k, true
		}
	}
	return ProblemKind{}, false
}

// ClassOf classifies an error answer: by its problem type when jobd
// defines it, otherwise (a proxy's HTML page, an unknown type) by its
// status alone, where 429, 502, 503 and 504 are taken as transient. It is ""
// for a status that says nothing a caller can act on.
func ClassOf(problemType string, status int) ProblemClass {
	if k, ok := LookupProblem(problemType); ok {
		return k.Class
	}
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return ClassInvalid
	case http.StatusUnauthorized:
		return ClassUnauthorized
	case http.StatusForbidden:
		return ClassForbidden
	case http.StatusNotFound:
		return ClassNotFound
	case http.StatusConflict:
		return ClassConflict
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return ClassUnavailable
	}
	return ""
}

// Error formats p as an error message.
func (p *Problem) Error() string {
	msg := p.Title
	if p.Detail != "" {
		msg = p.Detail
	}
	if msg == "" {
		msg = "HTTP error"
	}
	return msg
}
