package httpapi

import (
	"net/http"
	"sort"
	"unicode/utf8"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/ops"
	"github.com/jobd/jobd/store"
)

// queues: GET /api/v1/queues, every queue with its counts by state and
// paused flag, by name.
func (s *server) queues(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	qs, err := s.store.QueueList(r.Context())
	if err != nil {
		return err
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
	out := api.QueueList{Queues: make([]api.Queue, 0, len(qs))}
	for _, q := range qs {
		out.Queues = append(out.Queues, toAPIQueue(q))
	}
	return writeJSON(w, http.StatusOK, out)
}

// pauseQueue: POST /api/v1/queues/{name}/pause. No node claims from a
// paused queue. An unknown queue is created paused.
func (s *server) pauseQueue(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, true)
}

// resumeQueue: POST /api/v1/queues/{name}/resume, waking the queue's
// workers.
func (s *server) resumeQueue(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, false)
}

func (s *server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := checkQueueName(name); err != nil {
		return err
	}
	if err := ops.SetQueuePaused(r.Context(), s.store, name, paused); err != nil {
		return err
	}
	qs, err := s.store.QueueList(r.Context())
	if err != nil {
		return err
	}
	out := api.Queue{Name: name, Paused: paused}
	for _, q := range qs {
		if q.Name == name {
			out = toAPIQueue(q)
			break
		}
	}
	if out.Counts == nil {
		out = toAPIQueue(store.QueueInfo{QueueSettings: store.QueueSettings{Name: name, Paused: paused}})
	}
	return writeJSON(w, http.StatusOK, out)
}

// CheckQueueName applies the rule job.InsertParams applies to queue
// names: a 400 problem for a name no job could have.
func CheckQueueName(name string) error { return checkQueueName(name) }

func checkQueueName(name string) error {
	if name == "" || len(name) > 128 || !utf8.ValidString(name) {
		return badRequest("name", "a queue name is valid UTF-8 of 1 to 128 bytes")
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return badRequest("name", "a queue name must not contain control characters")
		}
	}
	return nil
}
