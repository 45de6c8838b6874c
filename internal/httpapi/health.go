package httpapi

import (
	"net/http"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
)

// health: GET /health. Fast, and never touches the database: it says the
// process serves HTTP.
func (s *server) health(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

// status: GET /status. The database answers, the version, the uptime and
// the job counts by state; 503 when the database does not answer.
func (s *server) status(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	if err := s.store.Ping(r.Context()); err != nil {
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
		s.log.Warn("status: database ping failed", "err", err)
		return problem.Errorf(api.ProblemUnavailable, "", "the database does not answer")
	}
	qs, err := s.store.QueueList(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			return r.Context().Err()
		}
		s.log.Warn("status: listing queues failed", "err", err)
		return problem.Errorf(api.ProblemUnavailable, "", "the database does not answer")
	}
	counts := make(map[api.State]int64, len(job.States))
	for _, st := range job.States {
		counts[api.State(st)] = 0
	}
	for _, q := range qs {
		for st, n := range q.Counts {
			counts[api.State(st)] += n
		}
	}
	up := s.clock.Now().Sub(s.started).Truncate(time.Second)
	return writeJSON(w, http.StatusOK, api.Status{
		Status:    "ok",
		Version:   s.cfg.Version,
		StartedAt: s.started.UTC(),
		Uptime:    api.Duration(up),
		Jobs:      counts,

		UptimeSeconds: api.Seconds(up),
	})
}
