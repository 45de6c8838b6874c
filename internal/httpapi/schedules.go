package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

// scheduleBody mirrors api.ScheduleRequest member for member (a test
// holds them equal).
type scheduleBody struct {
	Cron         string          `json:"cron"`
	Timezone     string          `json:"timezone"`
	Job          scheduleJobBody `json:"job"`
	Overlap      string          `json:"overlap"`
	CatchUp      string          `json:"catch_up"`
	CatchUpLimit int             `json:"catch_up_limit"`
}

// scheduleJobBody mirrors api.ScheduleJob.
type scheduleJobBody struct {
	Queue           string          `json:"queue"`
	Kind            string          `json:"kind"`
	Args            json.RawMessage `json:"args"`
	Priority        *int            `json:"priority"`
	MaxAttempts     int             `json:"max_attempts"`
	LeaseTTL        *api.Duration   `json:"lease_ttl"`
	Timeout         *api.Duration   `json:"timeout"`
	LeaseTTLSeconds *float64        `json:"lease_ttl_seconds"`
	TimeoutSeconds  *float64        `json:"timeout_seconds"`
	LockKey         string          `json:"lock_key"`
	PartitionKey    string          `json:"partition_key"`
	Requires        []string        `json:"requires"`
	Prefers         []string        `json:"prefers"`
}

// definition is the schedule the body describes under name.
func (b *scheduleBody) definition(name string) (schedule.Definition, error) {
	d := schedule.Definition{Name: name, Cron: b.Cron, Timezone: b.Timezone, Overlap: b.Overlap,
		CatchUp: b.CatchUp, CatchUpLimit: b.CatchUpLimit,
		Job: schedule.Template{Queue: b.Job.Queue, Kind: b.Job.Kind, Args: b.Job.Args, Priority: b.Job.Priority,
			MaxAttempts: b.Job.MaxAttempts, LockKey: b.Job.LockKey, PartitionKey: b.Job.PartitionKey,
			Requires: b.Job.Requires, Prefers: b.Job.Prefers}}
	for _, f := range []struct {
		field   string
		v       *api.Duration
		seconds *float64
		dst     *schedule.Duration
	}{
		{"job.lease_ttl", b.Job.LeaseTTL, b.Job.LeaseTTLSeconds, &d.Job.LeaseTTL},
		{"job.timeout", b.Job.Timeout, b.Job.TimeoutSeconds, &d.Job.Timeout},
	} {
		v, err := durationMember(f.field, f.v, f.seconds)
		if err != nil {
			return d, err
		}
		if v != nil {
			*f.dst = schedule.Duration(*v)
		}
	}
	return d, nil
}

// listSchedules: GET /api/v1/schedules, by name.
func (s *server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	list, err := s.store.ScheduleList(r.Context())
	if err != nil {
		return err
	}
	out := api.ScheduleList{Schedules: make([]api.Schedule, 0, len(list))}
	for i := range list {
		sc, err := toAPISchedule(&list[i])
		if err != nil {
			return err
		}
		out.Schedules = append(out.Schedules, sc)
	}
	return writeJSON(w, http.StatusOK, out)
}

// getSchedule: GET /api/v1/schedules/{name}.
func (s *server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	sc, err := s.store.ScheduleGet(r.Context(), name)
	if err != nil {
		return err
	}
	return writeSchedule(w, http.StatusOK, sc)
}

// putSchedule: PUT /api/v1/schedules/{name} {cron, timezone, job, ...}:
// 201 with a new schedule, 200 with a replaced one; 409 when the
// server's configuration owns the name.
func (s *server) putSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	var body scheduleBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	d, err := body.definition(name)
	if err != nil {
		return err
	}
	sc, created, err := s.schedules.Put(r.Context(), d)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/schedules/"+name)
	}
	return writeSchedule(w, status, sc)
}

// deleteSchedule: DELETE /api/v1/schedules/{name} → 204. Its jobs stay.
func (s *server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	if err := s.store.ScheduleDelete(r.Context(), name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pauseSchedule: POST /api/v1/schedules/{name}/pause.
func (s *server) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	sc, err := s.schedules.Pause(r.Context(), name)
	if err != nil {
		return err
	}
	return writeSchedule(w, http.StatusOK, sc)
}

// resumeSchedule: POST /api/v1/schedules/{name}/resume.
func (s *server) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	sc, err := s.schedules.Resume(r.Context(), name)
	if err != nil {
		return err
	}
	return writeSchedule(w, http.StatusOK, sc)
}

// triggerSchedule: POST /api/v1/schedules/{name}/trigger → 201 with the
// job it inserted now, or 200 with the job an earlier trigger of the
// same Idempotency-Key inserted.
func (s *server) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r)
	if err != nil {
		return err
	}
	key := r.Header.Get("Idempotency-Key")
	if err := job.CheckText("Idempotency-Key", key); err != nil {
		return err
	}
	res, err := s.schedules.Trigger(r.Context(), name, key)
	var verr *job.ValidationError
	if errors.As(err, &verr) && verr.Field == "idempotency_key" {
		return job.Invalid("Idempotency-Key", "is too long: the job's key is %q followed by it, at most %d bytes", schedule.TriggerKey(name, ""), job.MaxKeyBytes)
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/jobs/"+res.Job.ID.String())
		s.logTransition(r, "api: schedule triggered", res.Job)
	}
	return writeJSON(w, status, toAPIJob(res.Job))
}

// scheduleName reads the {name} path segment; the query must be empty.
func scheduleName(r *http.Request) (string, error) {
	if err := checkQuery(r); err != nil {
		return "", err
	}
	name := r.PathValue("name")
	if err := job.CheckName("name", name); err != nil {
		return "", badRequest("name", "a schedule name is valid UTF-8 of 1 to 128 bytes, without control characters")
	}
	return name, nil
}

func writeSchedule(w http.ResponseWriter, status int, sc *store.Schedule) error {
	out, err := toAPISchedule(sc)
	if err != nil {
		return err
	}
	return writeJSON(w, status, out)
}

// toAPISchedule shows a schedule on the wire.
func toAPISchedule(sc *store.Schedule) (api.Schedule, error) {
	d, err := schedule.DefinitionOf(sc)
	if err != nil {
		return api.Schedule{}, err
	}
	out := api.Schedule{
		Name: sc.Name, Cron: sc.Cron, Timezone: sc.Timezone, Overlap: sc.Overlap, CatchUp: sc.CatchUp,
		CatchUpLimit: sc.CatchUpLimit, Paused: sc.Paused, Source: sc.Source,
		NextRunAt: sc.NextRunAt.UTC(), LastRunAt: utc(sc.LastRunAt),
		CreatedAt: sc.CreatedAt.UTC(), UpdatedAt: sc.UpdatedAt.UTC(),
		Job: api.ScheduleJob{Queue: d.Job.Queue, Kind: d.Job.Kind, Args: d.Job.Args, Priority: d.Job.Priority,
			MaxAttempts: d.Job.MaxAttempts, LeaseTTL: api.Duration(time.Duration(d.Job.LeaseTTL)),
			Timeout: api.Duration(time.Duration(d.Job.Timeout)), LockKey: d.Job.LockKey,
			PartitionKey: d.Job.PartitionKey, Requires: d.Job.Requires, Prefers: d.Job.Prefers,
			LeaseTTLSeconds: secondsIfSet(time.Duration(d.Job.LeaseTTL)), TimeoutSeconds: secondsIfSet(time.Duration(d.Job.Timeout))},
	}
	if sc.LastJobID != uuid.Nil {
		id := sc.LastJobID
		out.LastJobID = &id
	}
	return out, nil
}
