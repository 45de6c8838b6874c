package web

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/store"
)

// workersData is the workers page.
type workersData struct {
	Workers []store.Worker
	Now     time.Time
}

// workers: GET /ui/workers, every remote worker (the registry is small:
// one row per machine).
func (s *server) workers(w http.ResponseWriter, r *http.Request, v viewer) error {
	ws, err := s.store.WorkerList(r.Context())
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "workers", "Workers", workersData{Workers: ws, Now: s.clock.Now()})
	return nil
}

// disableWorker: POST /ui/workers/{id}/disable, as POST
// /api/v1/workers/{id}/disable.
func (s *server) disableWorker(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.setWorkerDisabled(w, r, true)
}

// enableWorker: POST /ui/workers/{id}/enable.
func (s *server) enableWorker(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.setWorkerDisabled(w, r, false)
}

func (s *server) setWorkerDisabled(w http.ResponseWriter, r *http.Request, disabled bool) error {
	id, err := workerID(r)
	if err != nil {
		return err
	}
	x, err := s.store.WorkerSetDisabled(r.Context(), id, disabled)
	if err != nil {
		return err
	}
	what := "enabled"
	if disabled {
		what = "disabled"
	}
	return done(w, r, "/ui/workers", "Worker "+x.Name+" "+what+".")
}

// deleteWorker: POST /ui/workers/{id}/delete, as DELETE
// /api/v1/workers/{id}: its keys are revoked.
func (s *server) deleteWorker(w http.ResponseWriter, r *http.Request, v viewer) error {
	id, err := workerID(r)
	if err != nil {
		return err
	}
	if err := s.store.WorkerDelete(r.Context(), id); err != nil {
		return err
	}
	return done(w, r, "/ui/workers", "Worker deleted; its keys are revoked.")
}

func workerID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if _, err := uuid.Parse(id); err != nil {
		return "", notFound("no worker %q", id)
	}
	return id, nil
}
