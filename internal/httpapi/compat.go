package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// triggerBody mirrors api.TriggerRequest (a test holds them equal) with
// times as strings, so that a bad one is answered naming its field.
type triggerBody struct {
	Queue          string          `json:"queue"`
	Task           string          `json:"task"`
	Kind           string          `json:"kind"`
	Args           json.RawMessage `json:"args"`
	IdempotencyKey string          `json:"idempotency_key"`
	LockKey        string          `json:"lock_key"`
	PartitionKey   string          `json:"partition_key"`
	Priority       *int            `json:"priority"`
	AvailableAt    *string         `json:"available_at"`
	RunAt          *string         `json:"run_at"`
	CallbackURL    string          `json:"callback_url"`
}

func (b *triggerBody) params() (job.InsertParams, error) {
	p := job.InsertParams{
		Queue: b.Queue, Kind: b.Kind, Args: b.Args, Priority: b.Priority,
		LockKey: b.LockKey, PartitionKey: b.PartitionKey, IdempotencyKey: b.IdempotencyKey,
		CallbackURL: b.CallbackURL,
	}
	switch {
	case b.Task != "" && b.Kind != "" && b.Task != b.Kind:
		return p, job.Invalid("task", "task and kind name the same thing; give one")
	case b.Task != "":
		p.Kind = b.Task
	case b.Kind == "":
		return p, job.Invalid("task", "is required")
	}
	field, at := "run_at", b.RunAt
	if b.AvailableAt != nil {
		if b.RunAt != nil {
			return p, job.Invalid("available_at", "available_at and run_at name the same thing; give one")
		}
		field, at = "available_at", b.AvailableAt
	}
	if at != nil {
		t, err := parseTime(field, *at)
		if err != nil {
			return p, err
		}
		p.RunAt = t
	}
	return p, nil
}

// trigger: POST /api/v1/jobs/trigger, the dataloader's submission:
// {job_id, status}, 201 when created, 200 when the idempotency key matched
// (to every caller: the job's id and state are all it tells). A refused
// kind is named as the caller named it, "task" or "kind".
func (s *server) trigger(w http.ResponseWriter, r *http.Request) error {
	body := &triggerBody{}
	err := s.create(w, r, body, func(j *job.Job, _ bool) any {
		return api.TriggerResponse{JobID: j.ID, Status: api.State(j.State)}
	})
	var verr *job.ValidationError
	if errors.As(err, &verr) && verr.Field == "kind" && body.Task != "" {
		return job.Invalid("task", "%s", verr.Reason)
	}
	return err
}

// jobStatus: GET /api/v1/jobs/{id}/status, the dataloader's status.
func (s *server) jobStatus(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	j, err := s.callerJob(r, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.JobStatus{
		JobID:       j.ID,
		Status:      api.State(j.State),
		Attempt:     j.Attempt,
		StartedAt:   utc(j.StartedAt),
		FinishedAt:  utc(j.FinishedAt),
		HeartbeatAt: utc(j.HeartbeatAt),
		Error:       j.LastError,
		Progress:    toAPIProgress(j.Progress),
	})
}
