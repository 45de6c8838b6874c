package httpapi

import (
	"net/http"
	"sort"
	"unicode/utf8"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// queues: GET /api/v1/queues, every queue with its counts by state and
// paused flag, by name; for a key limited to queues, only those.
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
	caller := callerOf(r)
	for _, q := range qs {
		if caller.Allows(q.Name) { // a caller limited to queues sees only them
			out.Queues = append(out.Queues, toAPIQueue(q))
		}
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
	if err := s.store.QueueSetPaused(r.Context(), name, paused); err != nil {
		return err
	}
	return s.writeQueue(w, r, store.QueueSettings{Name: name, Paused: paused})
}

// writeQueue answers the queue named by want as GET /api/v1/queues shows
// it, or want itself, without jobs, when the list does not hold it.
func (s *server) writeQueue(w http.ResponseWriter, r *http.Request, want store.QueueSettings) error {
	qs, err := s.store.QueueList(r.Context())
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Name == want.Name {
			return writeJSON(w, http.StatusOK, toAPIQueue(q))
		}
	}
	return writeJSON(w, http.StatusOK, toAPIQueue(store.QueueInfo{QueueSettings: want}))
}

// putQueue: PUT /api/v1/queues/{name} {global_limit, partition_limit,
// rate, throttle_by}: replaces the queue's flow control as a whole (a
// member left out limits nothing; {} clears them), on every node, and
// answers the queue as GET /api/v1/queues shows it. An unknown queue is
// created. Bad input is a 400 or 422 problem naming the member, and
// nothing is written.
func (s *server) putQueue(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	name := r.PathValue("name")
	if err := checkQueueName(name); err != nil {
		return err
	}
	var body limitsBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	limits, err := body.limits()
	if err != nil {
		return err
	}
	if err := s.store.QueueSetLimits(r.Context(), name, limits); err != nil {
		return err
	}
	return s.writeQueue(w, r, store.QueueSettings{Name: name, Limits: limits})
}

// limitsBody is the body of PUT /api/v1/queues/{name} (api.QueueLimits).
type limitsBody struct {
	GlobalLimit    int       `json:"global_limit"`
	PartitionLimit int       `json:"partition_limit"`
	Rate           *rateBody `json:"rate"`
	ThrottleBy     string    `json:"throttle_by"`
}

type rateBody struct {
	Limit         int           `json:"limit"`
	Period        *api.Duration `json:"period"`
	PeriodSeconds *float64      `json:"period_seconds"`
	By            string        `json:"by"`
	Burst         int           `json:"burst"`
}

// limits checks b: a *job.ValidationError (422) names its first bad
// member as in JSON ("rate.period").
func (b limitsBody) limits() (flow.Limits, error) {
	l := flow.Limits{GlobalLimit: b.GlobalLimit, PartitionLimit: b.PartitionLimit, ThrottleBy: b.ThrottleBy}
	if b.Rate != nil {
		d, err := durationMember("rate.period", b.Rate.Period, b.Rate.PeriodSeconds)
		if err != nil {
			return flow.Limits{}, err
		}
		if d == nil {
			return flow.Limits{}, job.Invalid("rate.period", "is required: a number of seconds or a Go duration such as \"1m\"")
		}
		l.Rate = &flow.Rate{Limit: b.Rate.Limit, Period: *d, By: b.Rate.By, Burst: b.Rate.Burst}
	}
	if err := l.Check(); err != nil {
		return flow.Limits{}, err
	}
	return l, nil
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
