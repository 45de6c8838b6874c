package httpapi

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// The bodies of the worker routes, as the server decodes them: the api
// request types member for member (a test holds them equal), with the
// ids and lease tokens read as uuidArg, so that a malformed one is a 400
// naming its member (uuid.UUID's own error names none).

// uuidArg is a UUID member of a request: a UUID string, else a
// *json.UnmarshalTypeError of type uuid.UUID, which encoding/json
// completes with the member's name (decodeProblem).
type uuidArg uuid.UUID

// UnmarshalJSON reads a UUID string; null leaves u as it is.
func (u *uuidArg) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: jsonValueKind(b), Type: reflect.TypeFor[uuid.UUID]()}
	}
	v, err := uuid.Parse(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: fmt.Sprintf("string %.40q", s), Type: reflect.TypeFor[uuid.UUID]()}
	}
	*u = uuidArg(v)
	return nil
}

// jsonValueKind names the kind of a JSON value that is not a string.
func jsonValueKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "nothing"
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == 't', b[0] == 'f':
		return "bool"
	}
	return "number"
}

// leaseToken is a body's lease_token: required (422 naming it when
// absent).
func leaseToken(t *uuidArg) (uuid.UUID, error) {
	if t == nil || uuid.UUID(*t) == uuid.Nil {
		return uuid.Nil, job.Invalid("lease_token", "is required: the token the job's claim answered")
	}
	return uuid.UUID(*t), nil
}

// heartbeatBody mirrors api.HeartbeatRequest.
type heartbeatBody struct {
	Status string      `json:"status"`
	Leases []leaseBody `json:"leases"`
}

// leaseBody mirrors api.Lease.
type leaseBody struct {
	ID         uuidArg `json:"id"`
	LeaseToken uuidArg `json:"lease_token"`
}

// progressBody mirrors api.ProgressRequest.
type progressBody struct {
	LeaseToken *uuidArg        `json:"lease_token"`
	Phase      string          `json:"phase"`
	Done       int64           `json:"done"`
	Total      int64           `json:"total"`
	Items      json.RawMessage `json:"items"`
}

// checkpointBody mirrors api.CheckpointRequest.
type checkpointBody struct {
	LeaseToken *uuidArg        `json:"lease_token"`
	Checkpoint json.RawMessage `json:"checkpoint"`
}

// completeBody mirrors api.CompleteRequest.
type completeBody struct {
	LeaseToken *uuidArg        `json:"lease_token"`
	Result     json.RawMessage `json:"result"`
}

// failBody mirrors api.FailRequest.
type failBody struct {
	LeaseToken *uuidArg      `json:"lease_token"`
	Error      string        `json:"error"`
	Retryable  bool          `json:"retryable"`
	RetryAfter *api.Duration `json:"retry_after"`
	Throttle   *api.Duration `json:"throttle"`
}

// releaseBody mirrors api.ReleaseRequest.
type releaseBody struct {
	LeaseToken *uuidArg `json:"lease_token"`
}

// outcomesBody mirrors api.OutcomesRequest, its items kept raw: each is
// decoded, checked and answered on its own (outcomeBody).
type outcomesBody struct {
	Outcomes []json.RawMessage `json:"outcomes"`
}

// outcomeBody mirrors api.OutcomeItem.
type outcomeBody struct {
	ID         *uuidArg        `json:"id"`
	LeaseToken *uuidArg        `json:"lease_token"`
	Outcome    string          `json:"outcome"`
	Result     json.RawMessage `json:"result"`
	Error      *string         `json:"error"`
	Retryable  *bool           `json:"retryable"`
	RetryAfter *api.Duration   `json:"retry_after"`
	Throttle   *api.Duration   `json:"throttle"`
}
