package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// jobFilter is the jobs page's form.
type jobFilter struct {
	Queue, State, Kind, LockKey, PartitionKey string
	// Search is a job id or an idempotency key.
	Search string
}

// jobsData is the jobs page.
type jobsData struct {
	Filter jobFilter
	States []job.State
	Jobs   []*job.Job
	// Next links the next page ("" on the last).
	Next template.URL
	// Scanned is true when the page ended its scan before it was full
	// (Next then continues the search below the jobs looked at).
	Scanned bool
	// ScanLimit is how many jobs one page looks at, at most.
	ScanLimit int
	Now       time.Time
}

// jobs: GET /ui/jobs, newest first, paged by cursor (the last id of the
// page), with the API's filters and a search by id or idempotency key.
// No total is shown: counting the matches reads every matching row,
// where a page reads only its own. A page looks at the Config.ScanLimit newest
// jobs past its cursor at most, so that a filter few jobs match costs no
// more than that: when they hold fewer matches than a page, the page
// offers to search on below them.
func (s *server) jobs(w http.ResponseWriter, r *http.Request, v viewer) error {
	q := r.URL.Query()
	f := jobFilter{
		Queue: q.Get("queue"), State: q.Get("state"), Kind: q.Get("kind"),
		LockKey: q.Get("lock_key"), PartitionKey: q.Get("partition_key"),
		Search: strings.TrimSpace(q.Get("q")),
	}
	params := store.ListParams{
		Queue: f.Queue, Kind: f.Kind, LockKey: f.LockKey, PartitionKey: f.PartitionKey,
		Limit: pageSize + 1, NoTotal: true, ScanLimit: s.cfg.ScanLimit,
	}
	for _, name := range []string{f.Queue, f.Kind, f.LockKey, f.PartitionKey, f.Search} {
		if err := job.CheckText("filter", name); err != nil {
			return badRequest("a filter must be UTF-8 without NUL characters")
		}
	}
	if f.State != "" {
		st := job.State(f.State)
		if !st.Valid() {
			return badRequest("unknown state %q", f.State)
		}
		params.States = []job.State{st}
	}
	if after := q.Get("after"); after != "" {
		id, err := uuid.Parse(after)
		if err != nil {
			return badRequest("after must be a job id")
		}
		params.After = &store.Cursor{ID: id}
	}
	d := jobsData{Filter: f, States: job.States, ScanLimit: s.cfg.ScanLimit, Now: s.clock.Now()}
	if f.Search != "" {
		if id, err := uuid.Parse(f.Search); err == nil {
			j, err := s.store.JobGet(r.Context(), id)
			switch {
			case err == nil:
				d.Jobs = []*job.Job{j}
			case !errors.Is(err, job.ErrNotFound):
				return err
			}
			s.render(w, r, v, http.StatusOK, "jobs", "Jobs", d)
			return nil
		}
		params.IdempotencyKey = f.Search
	}
	res, err := s.store.JobList(r.Context(), params)
	if err != nil {
		return err
	}
	d.Jobs = res.Jobs
	var after string
	switch {
	case len(d.Jobs) > pageSize:
		d.Jobs = d.Jobs[:pageSize]
		after = d.Jobs[pageSize-1].ID.String()
	case res.ScannedTo != nil:
		d.Scanned, after = true, res.ScannedTo.String()
	}
	if after != "" {
		next := url.Values{}
		for k, vs := range q {
			if k != "after" && k != "msg" {
				next[k] = vs
			}
		}
		next.Set("after", after)
		d.Next = link("/ui/jobs", next)
	}
	s.render(w, r, v, http.StatusOK, "jobs", "Jobs", d)
	return nil
}

// jobData is a job's page.
type jobData struct {
	Job    *job.Job
	Events []job.Event
	// Steps are the job's recorded steps (docs/steps-and-children.md).
	Steps []job.Step
	Items []itemRow
	Now   time.Time
	// RunFor is how long the job ran or has been running.
	RunFor string
}

// job: GET /ui/jobs/{id}.
func (s *server) job(w http.ResponseWriter, r *http.Request, v viewer) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	j, err := s.store.JobGet(r.Context(), id)
	if err != nil {
		return err
	}
	evs, err := s.store.JobEvents(r.Context(), id)
	if err != nil {
		return err
	}
	steps, err := s.store.JobSteps(r.Context(), id)
	if err != nil {
		return err
	}
	d := jobData{Job: j, Events: evs, Steps: steps, Items: itemRows(j.Progress.Items), Now: s.clock.Now()}
	if j.StartedAt != nil {
		end := d.Now
		if j.FinishedAt != nil {
			end = *j.FinishedAt
		}
		d.RunFor = humanDuration(end.Sub(*j.StartedAt))
	}
	s.render(w, r, v, http.StatusOK, "job", "Job "+short(j.ID.String(), 8), d)
	return nil
}

// items: GET /ui/jobs/{id}/items, the job page's per-item rows alone,
// which its script re-reads when the stream shows them changed.
func (s *server) items(w http.ResponseWriter, r *http.Request, v viewer) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	j, err := s.store.JobGet(r.Context(), id)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := s.pages["job"].ExecuteTemplate(&buf, "items", jobData{Job: j, Items: itemRows(j.Progress.Items)}); err != nil {
		return fmt.Errorf("web: render items: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	_, err = w.Write(buf.Bytes())
	return err
}

// stream: GET /ui/jobs/{id}/stream, the API's job event stream under the
// dashboard's session: it counts against the caps of the viewer's key
// (or address, when authentication is off), and ends within the streams'
// recheck interval once the session no longer reads (its key revoked,
// its session ended).
func (s *server) stream(w http.ResponseWriter, r *http.Request, v viewer) error {
	if _, err := jobID(r); err != nil {
		return err
	}
	p := v.principal
	if v.open {
		p = httpapi.Principal{Admin: true, Open: true}
	}
	var check func(ctx context.Context) (bool, error)
	if !v.open {
		check = func(ctx context.Context) (bool, error) { return s.stillReads(ctx, r) }
	}
	s.cfg.JobStream.ServeHTTP(w, httpapi.WithStreamCaller(r, httpapi.CallerID(p, r), check))
	return nil
}

// stillReads reports whether the session of r may still read: the
// check a page makes (viewerOf), made again.
func (s *server) stillReads(ctx context.Context, r *http.Request) (bool, error) {
	v, err := s.viewerOf(ctx, r)
	if err != nil {
		return false, err
	}
	return v.loggedIn && v.can(scopeRead), nil
}

// cancel: POST /ui/jobs/{id}/cancel, as POST /api/v1/jobs/{id}/cancel.
func (s *server) cancel(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.transition(w, r, s.store.JobCancel, func(j *job.Job) string {
		if j.State == job.StateCanceled {
			return "Job canceled."
		}
		return "Cancel requested: the job stops at its holder's next heartbeat."
	})
}

// retry: POST /ui/jobs/{id}/retry, as POST /api/v1/jobs/{id}/retry.
func (s *server) retry(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.transition(w, r, s.store.JobRetry, func(*job.Job) string { return "Job queued again." })
}

func (s *server) transition(w http.ResponseWriter, r *http.Request, apply func(context.Context, uuid.UUID) (*job.Job, error), say func(*job.Job) string) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	j, err := apply(r.Context(), id)
	if err != nil {
		return err
	}
	return done(w, r, "/ui/jobs/"+id.String(), say(j))
}

// rerun: POST /ui/jobs/{id}/rerun, as POST /api/v1/jobs/{id}/rerun
// without new args: the finished job queued again, its result kept as
// the previous one.
func (s *server) rerun(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.transition(w, r, func(ctx context.Context, id uuid.UUID) (*job.Job, error) {
		return s.store.JobRerun(ctx, id, store.RerunParams{})
	}, func(j *job.Job) string { return fmt.Sprintf("Job queued to run again (re-run %d).", j.Rerun) })
}

// bulk: POST /ui/jobs/bulk, cancel or retry of the selected jobs, each
// as its API route does; those refused (already final, not failed…) are
// counted, not fatal.
func (s *server) bulk(w http.ResponseWriter, r *http.Request, v viewer) error {
	var apply func(context.Context, uuid.UUID) (*job.Job, error)
	action := r.PostFormValue("action")
	switch action {
	case "cancel":
		apply = s.store.JobCancel
	case "retry":
		apply = s.store.JobRetry
	default:
		return badRequest("action must be cancel or retry")
	}
	ids := r.PostForm["id"]
	if len(ids) == 0 {
		return done(w, r, "/ui/jobs", "No job selected.")
	}
	if len(ids) > 10*pageSize {
		return badRequest("at most %d jobs at once", 10*pageSize)
	}
	applied, refused := 0, 0
	for _, raw := range ids {
		id, err := uuid.Parse(raw)
		if err != nil {
			return badRequest("%q is not a job id", raw)
		}
		_, err = apply(r.Context(), id)
		switch {
		case err == nil:
			applied++
		case errors.Is(err, job.ErrWrongState), errors.Is(err, job.ErrNotFound), errors.Is(err, job.ErrDuplicate):
			refused++
		default:
			return err
		}
	}
	msg := fmt.Sprintf("%s: %s done", action, plural(applied, "job", "jobs"))
	if refused > 0 {
		msg += fmt.Sprintf(", %s refused (not in a state that allows it)", plural(refused, "job", "jobs"))
	}
	return done(w, r, "/ui/jobs", msg+".")
}

func jobID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return uuid.Nil, notFound("no job %q", r.PathValue("id"))
	}
	return id, nil
}
