package gateway

import (
	"net/http"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
)

// arangoProblem is a problem document of the gateway's ArangoDB routes
// (/gw/ and /_api/job/): the RFC 9457 members, and beside them those of
// an ArangoDB error, so that a client written for ArangoDB reads it as
// ArangoDB's own: {"error": true, "errorNum": N, "errorMessage": "…",
// "code": HTTP status}.
type arangoProblem struct {
	*api.Problem
	ArangoError  bool   `json:"error"`
	ErrorNum     int    `json:"errorNum"`
	ErrorMessage string `json:"errorMessage"`
	Code         int    `json:"code"`
}

// arangoError is an ArangoDB error: its number and message (ArangoDB's
// lib/Basics/errors.dat).
type arangoError struct {
	num     int
	message string
}

// arangoErrors is the ArangoDB error of each problem kind the gateway
// answers: the HTTP errors ArangoDB answers with the same status, or the
// error it raises in that case (a canceled request, a full queue).
var arangoErrors = map[string]arangoError{
	api.ProblemBadRequest:       {400, "bad parameter"},                         // ERROR_HTTP_BAD_PARAMETER
	api.ProblemValidation:       {400, "bad parameter"},                         // ERROR_HTTP_BAD_PARAMETER
	api.ProblemTooLarge:         {32, "resource limit exceeded"},                // ERROR_RESOURCE_LIMIT
	api.ProblemUnauthorized:     {11, "not authorized to execute this request"}, // ERROR_FORBIDDEN, as ArangoDB answers a 401
	api.ProblemForbidden:        {11, "forbidden"},                              // ERROR_FORBIDDEN
	api.ProblemNotFound:         {404, "not found"},                             // ERROR_HTTP_NOT_FOUND
	api.ProblemMethodNotAllowed: {405, "method not supported"},                  // ERROR_HTTP_METHOD_NOT_ALLOWED
	api.ProblemWrongState:       {409, "conflict"},                              // ERROR_HTTP_CONFLICT
	api.ProblemDuplicate:        {409, "conflict"},                              // ERROR_HTTP_CONFLICT
	api.ProblemCanceled:         {21, "canceled request"},                       // ERROR_REQUEST_CANCELED
	api.ProblemInternal:         {500, "internal server error"},                 // ERROR_HTTP_SERVER_ERROR
	api.ProblemUpstreamFailed:   {500, "internal server error"},                 // ERROR_HTTP_SERVER_ERROR
	api.ProblemUnavailable:      {503, "service unavailable"},                   // ERROR_HTTP_SERVICE_UNAVAILABLE
	api.ProblemBusy:             {21003, "named queue is full"},                 // ERROR_QUEUE_FULL
	api.ProblemUpstreamTimeout:  {504, "gateway timeout"},                       // ERROR_HTTP_GATEWAY_TIMEOUT
}

// arangoOf returns the ArangoDB error of p: its kind's, or, for a kind
// the table lacks, the HTTP error of its class.
func arangoOf(p *api.Problem) arangoError {
	if e, ok := arangoErrors[p.Type]; ok {
		return e
	}
	if p.Status >= 500 {
		return arangoErrors[api.ProblemInternal]
	}
	return arangoErrors[api.ProblemBadRequest]
}

// newArangoProblem returns p with ArangoDB's error members.
func newArangoProblem(p *api.Problem) *arangoProblem {
	e := arangoOf(p)
	return &arangoProblem{Problem: p, ArangoError: true, ErrorNum: e.num, ErrorMessage: e.message, Code: p.Status}
}

// writeArangoError answers err as writeError does, with ArangoDB's error
// members beside the problem's: the answers of /gw/ and /_api/job/.
func (g *Gateway) writeArangoError(w http.ResponseWriter, r *http.Request, err error) {
	problem.WriteErrorDocument(w, r, g.log, "gateway: request failed", err, func(p *api.Problem) any { return newArangoProblem(p) })
}
