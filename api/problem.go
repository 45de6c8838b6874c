package api

// The stable type URIs of the problems the API answers with.
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
	// ProblemNotFound (404): no such job, key or route.
	ProblemNotFound = "https://jobd.dev/problems/not-found"
	// ProblemMethodNotAllowed (405): the route exists for other methods.
	ProblemMethodNotAllowed = "https://jobd.dev/problems/method-not-allowed"
	// ProblemWrongState (409): the job's state does not allow the
	// operation (cancel of a finished job, retry of a queued one).
	ProblemWrongState = "https://jobd.dev/problems/wrong-state"
	// ProblemDuplicate (409): a retry would duplicate an active twin.
	ProblemDuplicate = "https://jobd.dev/problems/duplicate"
	// ProblemUnavailable (503): the database does not answer.
	ProblemUnavailable = "https://jobd.dev/problems/unavailable"
	// ProblemInternal (500): a server fault; the detail is in its log.
	ProblemInternal = "https://jobd.dev/problems/internal"
)

// ProblemContentType is the media type of a Problem body.
const ProblemContentType = "application/problem+json"

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
