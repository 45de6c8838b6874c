package remote

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// Durable execution for remote workers (docs/steps-and-children.md):
// the same store calls as the engine's, fenced by the worker's lease,
// within the server's limits (Config.MaxSteps, MaxStepResultBytes,
// MaxChildren).

// Step records a step of the job lease holds (store JobStep).
func (s *Service) Step(ctx context.Context, lease store.Lease, name string, result json.RawMessage, startedAt time.Time) (*store.StepResult, error) {
	return s.store.JobStep(ctx, lease, store.StepParams{Name: name, Result: result, StartedAt: startedAt,
		MaxSteps: s.cfg.MaxSteps, MaxResult: s.cfg.MaxStepResultBytes})
}

// Spawn spawns children of the job lease holds (store JobSpawn). The
// caller checked each child as a submission of its own (its queue rules,
// jobd's reserved names).
func (s *Service) Spawn(ctx context.Context, lease store.Lease, children []job.ChildParams) ([]store.InsertResult, error) {
	return s.store.JobSpawn(ctx, lease, store.SpawnParams{Children: children, MaxChildren: s.cfg.MaxChildren})
}

// Wait ends the attempt of the job lease holds waiting (store JobWait).
func (s *Service) Wait(ctx context.Context, lease store.Lease, w job.WaitRequest) (*job.Job, error) {
	j, err := s.store.JobWait(ctx, lease, w)
	if err == nil {
		// The attempt is over, given back: recorded as a release.
		if n, ok := s.claims.take(lease); ok {
			n.rec.Finished(observe.Released, s.clock.Now().Sub(n.at))
		}
	}
	return j, err
}
