package web

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

// scheduleRow is one schedule of the schedules page.
type scheduleRow struct {
	*store.Schedule
	// Queue and Kind are its job template's; Problem says why the
	// template does not read ("" when it does).
	Queue, Kind, Problem string
}

// schedulesData is the schedules page.
type schedulesData struct {
	Configured bool
	Schedules  []scheduleRow
	// TriggerKey is the idempotency key of the page's trigger forms: a
	// form sent twice (a double click, a reload) triggers one job.
	TriggerKey string
	Now        time.Time
}

// schedules: GET /ui/schedules, every schedule by name (there are few:
// each is a line of configuration), as GET /api/v1/schedules lists them.
func (s *server) schedules(w http.ResponseWriter, r *http.Request, v viewer) error {
	d := schedulesData{Configured: s.cfg.Schedules != nil, Now: s.clock.Now(), TriggerKey: uuid.NewString()}
	if d.Configured {
		list, err := s.store.ScheduleList(r.Context())
		if err != nil {
			return err
		}
		for i := range list {
			row := scheduleRow{Schedule: &list[i]}
			if def, err := schedule.DefinitionOf(&list[i]); err != nil {
				row.Problem = err.Error()
			} else {
				row.Queue, row.Kind = def.Job.Queue, def.Job.Kind
				if row.Queue == "" {
					row.Queue = job.DefaultQueue
				}
			}
			d.Schedules = append(d.Schedules, row)
		}
	}
	s.render(w, r, v, http.StatusOK, "schedules", "Schedules", d)
	return nil
}

// pauseSchedule: POST /ui/schedules/{name}/pause, as POST
// /api/v1/schedules/{name}/pause.
func (s *server) pauseSchedule(w http.ResponseWriter, r *http.Request, v viewer) error {
	name, err := s.scheduleName(r)
	if err != nil {
		return err
	}
	if _, err := s.cfg.Schedules.Pause(r.Context(), name); err != nil {
		return err
	}
	return done(w, r, "/ui/schedules", "Schedule "+name+" paused.")
}

// resumeSchedule: POST /ui/schedules/{name}/resume, as POST
// /api/v1/schedules/{name}/resume: it starts again at its next tick.
func (s *server) resumeSchedule(w http.ResponseWriter, r *http.Request, v viewer) error {
	name, err := s.scheduleName(r)
	if err != nil {
		return err
	}
	sc, err := s.cfg.Schedules.Resume(r.Context(), name)
	if err != nil {
		return err
	}
	return done(w, r, "/ui/schedules", fmt.Sprintf("Schedule %s resumed; its next run is at %s.", name, sc.NextRunAt.UTC().Format(time.RFC3339)))
}

// triggerSchedule: POST /ui/schedules/{name}/trigger, as POST
// /api/v1/schedules/{name}/trigger with the form's key as its
// Idempotency-Key: the job goes to its page.
func (s *server) triggerSchedule(w http.ResponseWriter, r *http.Request, v viewer) error {
	name, err := s.scheduleName(r)
	if err != nil {
		return err
	}
	key := r.PostFormValue("key")
	if _, err := uuid.Parse(key); err != nil {
		return badRequest("the form's key is not one this dashboard makes: reload the page")
	}
	res, err := s.cfg.Schedules.Trigger(r.Context(), name, key)
	if err != nil {
		return err
	}
	msg := "Schedule " + name + " triggered: this is its job."
	if !res.Created {
		msg = "Schedule " + name + " was triggered by this form already: this is its job."
	}
	http.Redirect(w, r, string(link("/ui/jobs/"+res.Job.ID.String(), url.Values{"msg": {msg}})), http.StatusSeeOther)
	return nil
}

// scheduleName reads the {name} of a schedule's action: 404 without
// schedules, 400 for a name no schedule can have (job.CheckName, the
// API's rule).
func (s *server) scheduleName(r *http.Request) (string, error) {
	if s.cfg.Schedules == nil {
		return "", notFound("schedules are not served by this dashboard")
	}
	name := r.PathValue("name")
	if err := job.CheckName("name", name); err != nil {
		return "", badRequest("a schedule name is valid UTF-8 of 1 to 128 bytes, without control characters")
	}
	return name, nil
}
