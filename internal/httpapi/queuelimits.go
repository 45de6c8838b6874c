package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
)

// queueRoutes are the routes whose work is the jobs of one queue: the
// only routes a key limited to queues may use. They submit to its queues
// only (403 naming queue otherwise), list and count only their jobs, and
// read, cancel, retry and re-run only their jobs: a job of another queue
// is 404, as an unknown id is. openapi.json marks each with
// "x-jobd-queue-scoped": true.
var queueRoutes = map[string]bool{
	"POST /api/v1/jobs":             true,
	"POST /api/v1/jobs/batch":       true,
	"GET /api/v1/jobs":              true,
	"GET /api/v1/jobs/{id}":         true,
	"POST /api/v1/jobs/{id}/cancel": true,
	"POST /api/v1/jobs/{id}/signal": true,
	"POST /api/v1/jobs/{id}/retry":  true,
	"POST /api/v1/jobs/{id}/rerun":  true,
	"GET /api/v1/jobs/{id}/events":  true,
	"GET /api/v1/jobs/{id}/stream":  true,
	"POST /api/v1/jobs/trigger":     true,
	"GET /api/v1/jobs/{id}/status":  true,
	"GET /api/v1/queues":            true,

	// A workflow is a key's when every task's queue is one of its
	// queues (callerWorkflow).
	"POST /api/v1/workflows":             true,
	"GET /api/v1/workflows":              true,
	"GET /api/v1/workflows/{id}":         true,
	"POST /api/v1/workflows/{id}/cancel": true,
	"POST /api/v1/workflows/{id}/retry":  true,
}

// queueScoped reports whether rt is one of queueRoutes.
func (rt route) queueScoped() bool { return queueRoutes[rt.pattern()] }

// errQueueLimited refuses a key limited to queues on a route whose work
// is not one queue's jobs.
var errQueueLimited = problem.Errorf(api.ProblemForbidden, "queues",
	"this API key is limited to queues; this route is not about one queue's jobs (a key of every queue is needed)")

// callerJob reads job id for the caller: job.ErrNotFound, exactly as for
// an unknown id, when the caller is limited to queues that do not hold
// it. A job's queue never changes, so what the caller may do with it
// holds until the job is gone. Every route that acts on one job by its
// id reads it through here first.
func (s *server) callerJob(r *http.Request, id uuid.UUID) (*job.Job, error) {
	j, err := s.store.JobGet(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if !callerOf(r).Allows(j.Queue) {
		return nil, fmt.Errorf("job %s of a queue the caller is not limited to: %w", id, job.ErrNotFound)
	}
	return j, nil
}

// checkSubmitQueue refuses a submission to a queue the caller is not
// limited to: 403 naming queue. queue "" is the default queue.
func checkSubmitQueue(r *http.Request, queue string) error {
	if queue == "" {
		queue = job.DefaultQueue
	}
	p := callerOf(r)
	if p.Allows(queue) {
		return nil
	}
	return problem.Errorf(api.ProblemForbidden, "queue", "this API key may submit only to the queues %s, not %q", strings.Join(p.Queues, ", "), queue)
}

// keyQueues checks the queues of a key request: none, or patterns
// (job.ParseQueuePatterns) for a key whose every scope is one of
// queueScopes. 422 naming queues otherwise.
func keyQueues(req api.KeyRequest, granted []string) (job.QueuePatterns, error) {
	qs, err := job.ParseQueuePatterns("queues", req.Queues)
	if err != nil || !qs.Limited() {
		return nil, err
	}
	for _, sc := range granted {
		if !slices.Contains(queueScopes, scope(sc)) {
			return nil, job.Invalid("queues", "a key of scope %s cannot be limited to queues: only keys of scopes submit, read and cancel can", sc)
		}
	}
	return qs, nil
}
