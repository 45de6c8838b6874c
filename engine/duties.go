package engine

import (
	"context"
	"time"

	"github.com/jobd/jobd/engine/internal/maintenance"
	"github.com/jobd/jobd/store"
)

const (
	// leaderTermFactor: the maintenance leader's term is this many
	// ReaperIntervals long, renewed every ReaperInterval.
	leaderTermFactor = 3
	// pruneInterval is the gap between two retention passes.
	pruneInterval = time.Minute
	// dutyBatch is the rows one rescue or prune call handles; a pass
	// repeats it until fewer come back.
	dutyBatch = 1000
)

// The engine's own maintenance duties.
const (
	// DutyRescue returns expired leases to their queue, on every node.
	DutyRescue = "rescue"
	// DutyPrune deletes the finished jobs older than Retention, on the
	// leader.
	DutyPrune = "prune"
)

// newMaintenance returns the node's maintenance runner with the engine's
// duties: rescue on every node (JobRescue is safe to run concurrently,
// so an expired lease never waits for a leader), prune on the leader.
func newMaintenance(cfg Config) (*maintenance.Runner, error) {
	return maintenance.New(maintenance.Config{
		Elector: cfg.Store, Node: cfg.Node, Term: leaderTermFactor * cfg.ReaperInterval,
		Clock: cfg.Clock, Logger: cfg.Logger,
	})
}

func (e *Engine) addOwnDuties() error {
	if err := e.runner.Add(maintenance.Duty{Name: DutyRescue, Interval: e.cfg.ReaperInterval, Pass: e.rescue}); err != nil {
		return err
	}
	return e.runner.Add(maintenance.Duty{Name: DutyPrune, Interval: pruneInterval, Leader: true, Pass: e.prune})
}

// Duty is one periodic task of a node's maintenance: its Pass runs every
// Interval on each node, or, with Leader, only on the node that leads
// (under a context that ends with its term). See AddDuty.
type Duty = maintenance.Duty

// Term is the leader term a leader duty's pass runs in: when it began, and
// since when the node had been in contact with the database before it
// (HandOver tells a hand-over between leaders from a cluster that was down).
type Term = maintenance.Term

// TermOf returns the term a leader duty's pass runs in; ok is false
// outside one (a pass on every node, or a context not from the runner).
func TermOf(ctx context.Context) (t Term, ok bool) { return maintenance.TermOf(ctx) }

// WithTerm returns ctx carrying t as TermOf reads it: what the runner does
// for each leader pass, for calling a duty's pass outside it (its tests).
func WithTerm(ctx context.Context, t Term) context.Context { return maintenance.WithTerm(ctx, t) }

// Election is the name of the leader election the maintenance duties share
// (the store's leader row or lock of that name).
const Election = maintenance.DefaultElection

// AddDuty adds a maintenance duty to the ones this node runs: a leader
// duty shares the engine's leader election, so that exactly one node
// runs it at a time. It must be called before Run.
func (e *Engine) AddDuty(d Duty) error {
	return e.runner.Add(d)
}

// Leading reports whether this node leads the maintenance duties now.
func (e *Engine) Leading() bool { return e.runner.Leading() }

// rescue returns the jobs whose lease expired to their queue, and ends
// the attempts that passed their deadline (timeOut).
func (e *Engine) rescue(ctx context.Context) error {
	if err := e.timeOut(ctx); err != nil {
		return err
	}
	total := 0
	defer func() {
		if total > 0 {
			e.log.Info("engine: rescued jobs whose lease expired", "jobs", total)
		}
	}()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		n, err := e.store.JobRescue(cctx, dutyBatch)
		cancel()
		total += n
		if n > 0 {
			e.cfg.Observer.Rescued(n)
		}
		if err != nil || n < dutyBatch {
			return err
		}
	}
}

// timeOut ends the attempts that passed their deadline: back to their
// queue after its backoff (RetryDelay) while attempts are left, else
// failed.
func (e *Engine) timeOut(ctx context.Context) error {
	total := 0
	defer func() {
		if total > 0 {
			e.log.Info("engine: ended attempts that passed their deadline", "jobs", total)
		}
	}()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		n, err := e.store.JobTimeOut(cctx, store.TimeOutParams{Limit: dutyBatch, RetryDelay: e.RetryDelay})
		cancel()
		total += n
		if n > 0 {
			e.cfg.Observer.TimedOut(n)
		}
		if err != nil || n < dutyBatch {
			return err
		}
	}
}

// prune deletes the finished jobs older than Retention.
func (e *Engine) prune(ctx context.Context) error {
	before := e.clock.Now().Add(-e.cfg.Retention)
	total := 0
	defer func() {
		if total > 0 {
			e.log.Info("engine: pruned finished jobs", "jobs", total, "before", before)
		}
	}()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		n, err := e.store.JobPrune(cctx, before, dutyBatch)
		cancel()
		total += n
		if err != nil || n < dutyBatch {
			return err
		}
	}
}
