package web

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// processesData is the processes page: one namespace's processes.
type processesData struct {
	Namespaces []string
	Namespace  string
	Status     string
	Processes  []store.Process
	// Total counts the namespace's processes of that status (an index
	// range of the namespace).
	Total int64
	Next  template.URL
	Now   time.Time
}

// processes: GET /ui/processes[?ns=&status=&after=], by id, paged.
func (s *server) processes(w http.ResponseWriter, r *http.Request, v viewer) error {
	d := processesData{Now: s.clock.Now()}
	if s.cfg.Processes == nil {
		s.render(w, r, v, http.StatusOK, "processes", "Processes", d)
		return nil
	}
	q := r.URL.Query()
	d.Namespaces = s.cfg.Processes.Namespaces()
	d.Namespace, d.Status = q.Get("ns"), q.Get("status")
	if d.Namespace == "" && len(d.Namespaces) > 0 {
		d.Namespace = d.Namespaces[0]
	}
	if !s.cfg.Processes.Has(d.Namespace) {
		return notFound("no process namespace %q", d.Namespace)
	}
	params := store.ProcessListParams{Namespace: d.Namespace, After: q.Get("after"), Limit: pageSize}
	switch st := store.ProcessStatus(d.Status); st {
	case "", store.ProcessRunning, store.ProcessError:
		params.Status = st
	default:
		return badRequest("status must be running or error")
	}
	if err := job.CheckText("after", params.After); err != nil {
		return badRequest("after must be a process id")
	}
	ps, total, err := s.store.ProcessList(r.Context(), params)
	if err != nil {
		return err
	}
	d.Processes, d.Total = ps, total
	if len(ps) == pageSize {
		next := url.Values{"ns": {d.Namespace}, "after": {ps[len(ps)-1].ID}}
		if d.Status != "" {
			next.Set("status", d.Status)
		}
		d.Next = link("/ui/processes", next)
	}
	s.render(w, r, v, http.StatusOK, "processes", "Processes", d)
	return nil
}

// processData is a process's page with one page of its history.
type processData struct {
	Process *store.Process
	// Older and Newer link the history's neighbouring pages ("" for
	// none).
	Older, Newer template.URL
	Now          time.Time
}

// process: GET /ui/processes/{ns}/{id}[?before=N|after=N]: the process
// and its history, newest page first, pageSize events a page.
func (s *server) process(w http.ResponseWriter, r *http.Request, v viewer) error {
	ns, id := r.PathValue("ns"), r.PathValue("id")
	if s.cfg.Processes == nil || !s.cfg.Processes.Has(ns) {
		return notFound("no process namespace %q", ns)
	}
	page := store.HistoryPage{After: -1, Limit: pageSize}
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return badRequest("after must be an event id")
		}
		page.After = n
	}
	p, err := s.store.ProcessGet(r.Context(), ns, id, page)
	if err != nil {
		return err
	}
	d := processData{Process: p, Now: s.clock.Now()}
	here := "/ui/processes/" + url.PathEscape(ns) + "/" + url.PathEscape(id)
	if len(p.History) > 0 {
		first, last := p.History[0].EventID, p.History[len(p.History)-1].EventID
		if first > 1 {
			d.Older = link(here, url.Values{"after": {strconv.FormatInt(max(first-1-pageSize, 0), 10)}})
		}
		if last < p.LastEventID {
			d.Newer = link(here, url.Values{"after": {strconv.FormatInt(last, 10)}})
		}
	}
	s.render(w, r, v, http.StatusOK, "process", "Process "+id, d)
	return nil
}

// repair: POST /ui/processes/{ns}/{id}/repair, as POST
// /api/v1/processes/{ns}/{id}/repair: a repair task is submitted (the
// page shows its outcome once it ran).
func (s *server) repair(w http.ResponseWriter, r *http.Request, v viewer) error {
	ns, id := r.PathValue("ns"), r.PathValue("id")
	if s.cfg.Processes == nil || !s.cfg.Processes.Has(ns) {
		return notFound("no process namespace %q", ns)
	}
	j, err := s.cfg.Processes.Submit(r.Context(), ns, id, process.TaskRepair, nil, "")
	if err != nil {
		return err
	}
	return done(w, r, "/ui/processes/"+url.PathEscape(ns)+"/"+url.PathEscape(id),
		"Repair task "+j.ID.String()+" submitted.")
}
