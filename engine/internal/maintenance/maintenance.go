// Package maintenance runs a node's periodic duties (the rescue of expired
// leases, retention, the async results' TTL, the remote-worker sweep…) as
// services of one Runner: each duty has its own loop, interval, backoff
// and health logging, so that one that fails or runs long never delays or
// skips another.
//
// A duty either runs on every node or only on the one that leads. The
// Runner holds one leader election per process, under a term it renews
// every Term/3 on a loop of its own, however long the duties' passes take.
// The leader duties run under a context that ends with the term: when
// another node took over, or when the term's end came before a renewal
// could confirm it (a database that stopped answering). A node therefore
// never runs a leader duty past a term it was granted.
//
// An Elector that is also a LeaderWatcher (store/postgres, with a direct
// connection to PostgreSQL) makes the hand-over fast: a leader that dies
// is replaced within moments, not when its term runs out (see
// LeaderWatcher and watch.go). A leader that learns that its presence
// ended stops its duties at once; until it learns it, a dead leader's
// successor and a leader cut off from the database may both run a pass,
// which every leader duty tolerates: each of its writes is fenced by
// the state it expects (a schedule's next run, a lease's token).
//
// Adding a duty is a Duty value and one call:
//
//	runner.Add(maintenance.Duty{
//		Name: "prune", Interval: time.Minute, Leader: true,
//		Pass: func(ctx context.Context) error { … },
//	})
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/observe"
)

// DefaultElection is the name of the leader election a Runner holds
// unless Config.Election names another.
const DefaultElection = "maintenance"

// Elector keeps the leader terms of an election; store.Store is one.
type Elector interface {
	// LeaderAttempt makes node the leader of name until now + ttl, unless
	// another node holds an unexpired term, or extends node's own term. It
	// reports whether node leads.
	LeaderAttempt(ctx context.Context, name, node string, ttl time.Duration) (bool, error)
	// LeaderResign ends node's term of name, if it holds it.
	LeaderResign(ctx context.Context, name, node string) error
}

// LeaderWatcher is an Elector that can also tell, through a connection of
// its own, the moment a leader's presence ends, so that another node takes
// over at once instead of when the dead leader's term runs out.
type LeaderWatcher interface {
	// LeaderWatch holds node's presence in election name until ctx ends,
	// then returns nil. It calls present(true) each time the presence is
	// (re)established and present(false) each time it is lost (its
	// connection failed: node must stop leading at once, since another
	// node may take over), and vacated when the leader's presence ended:
	// it made node the leader in its place for ttl, or found the term
	// free (a resignation), so node attempts at once. It returns an error
	// at once when it cannot watch (then the term alone elects).
	LeaderWatch(ctx context.Context, name, node string, ttl time.Duration, present func(bool), vacated func()) error
}

// Duty is one periodic task of maintenance.
type Duty struct {
	// Name names the duty in logs; unique within a Runner.
	Name string
	// Interval is the gap between the end of one pass and the start of
	// the next. The first pass starts at once (for a leader duty: once the
	// node leads).
	Interval time.Duration
	// Leader makes the duty run only on the node that leads, under a
	// context that ends with the leader's term. Otherwise it runs on every
	// node.
	Leader bool
	// Pass does the work once. It must return soon after ctx ends. An
	// error is logged (once, until a pass succeeds again) and the pass is
	// retried with a growing delay, never later than Interval; a panic
	// counts as an error.
	Pass func(ctx context.Context) error
}

// Config configures a Runner. Zero fields take the documented defaults.
type Config struct {
	// Elector keeps the leader terms. Required once a leader duty is
	// added.
	Elector Elector
	// Node names this process in the election. Required.
	Node string
	// Term is how long an election win lasts; it is renewed every Term/3.
	// Required once a leader duty is added.
	Term time.Duration
	// Election names the leader election. Default DefaultElection.
	Election string
	// Clock defaults to clock.Real.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Runner runs the duties of one node. Create it with New, Add the duties,
// then call Run once.
type Runner struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger

	mu      sync.Mutex
	duties  []Duty
	started bool

	// current is the term this node holds, nil when it does not lead.
	current atomic.Pointer[term]

	points Points
}

// Points are where a Runner reports what its tests wait for
// (observe.Point): inert unless something attaches to them, as the tests
// do (internal/testutil/testsignal).
type Points struct {
	// Attempt reports after each election attempt, once the next one is
	// scheduled, with whether this node leads.
	Attempt observe.Point[bool]
	// Pass reports after each pass of a duty, once the next one is
	// scheduled.
	Pass observe.Point[PassDone]
	// TermEnded reports when this node stopped leading and its leader duties
	// have returned.
	TermEnded observe.Point[string]
	// Watched reports when the elector's watch (LeaderWatcher) reported
	// something and the election has acted on it: "present", "lost",
	// "vacated", or "unavailable" when it cannot watch.
	Watched observe.Point[string]
}

// PassDone is one finished pass of a duty, as Points.Pass reports it.
type PassDone struct {
	Duty string
	Err  error
}

// Points returns the runner's points, for a watcher to attach to.
func (r *Runner) Points() *Points { return &r.points }

// New checks cfg and returns a Runner without duties.
func New(cfg Config) (*Runner, error) {
	if cfg.Node == "" {
		return nil, errors.New("maintenance: Config.Node is required")
	}
	if cfg.Term < 0 {
		return nil, fmt.Errorf("maintenance: Config.Term must not be negative, got %s", cfg.Term)
	}
	if cfg.Election == "" {
		cfg.Election = DefaultElection
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{cfg: cfg, clock: cfg.Clock, log: cfg.Logger}, nil
}

// Add registers a duty. It must be called before Run.
func (r *Runner) Add(d Duty) error {
	switch {
	case d.Name == "":
		return errors.New("maintenance: a duty needs a Name")
	case d.Interval <= 0:
		return fmt.Errorf("maintenance: duty %q needs a positive Interval, got %s", d.Name, d.Interval)
	case d.Pass == nil:
		return fmt.Errorf("maintenance: duty %q needs a Pass", d.Name)
	case d.Leader && (r.cfg.Elector == nil || r.cfg.Term <= 0):
		return fmt.Errorf("maintenance: leader duty %q needs Config.Elector and Config.Term", d.Name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return fmt.Errorf("maintenance: duty %q added after Run", d.Name)
	}
	for _, x := range r.duties {
		if x.Name == d.Name {
			return fmt.Errorf("maintenance: duty %q added twice", d.Name)
		}
	}
	r.duties = append(r.duties, d)
	return nil
}

// Leading reports whether this node leads now: it won the election and
// the term has not ended.
func (r *Runner) Leading() bool {
	t := r.current.Load()
	return t != nil && t.holds(r.clock.Now())
}

// Run runs the duties until ctx ends, then stops them, waits for their
// passes to return and, if this node leads, resigns so that another node
// can take over at once. No goroutine it started outlives it. Run may be
// called once.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("maintenance: Run called more than once")
	}
	r.started = true
	duties := r.duties
	r.mu.Unlock()

	var wg sync.WaitGroup
	var leader []Duty
	for _, d := range duties {
		if d.Leader {
			leader = append(leader, d)
			continue
		}
		wg.Go(func() { r.loop(ctx, d) })
	}
	if len(leader) > 0 {
		feed := r.watch(ctx, &wg)
		wg.Go(func() { r.elect(ctx, leader, feed) })
	}
	wg.Wait()
	return nil
}

// loop runs d's passes until ctx ends.
func (r *Runner) loop(ctx context.Context, d Duty) {
	h := health{log: r.log, what: d.Name}
	t := r.clock.NewTimer(0)
	defer t.Stop()
	delay := retryMin
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		err := r.pass(ctx, d)
		if ctx.Err() != nil {
			return
		}
		next := d.Interval
		if err != nil {
			h.fail(err)
			next = min(delay, d.Interval)
			delay = nextRetry(delay)
		} else {
			h.ok()
			delay = retryMin
		}
		t.Reset(next)
		r.points.Pass.Report(PassDone{Duty: d.Name, Err: err})
	}
}

// pass runs one pass of d, turning a panic into an error.
func (r *Runner) pass(ctx context.Context, d Duty) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	return d.Pass(ctx)
}

// Retry delays after a failed pass or election attempt: doubling from
// retryMin to retryMax.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

func nextRetry(d time.Duration) time.Duration { return min(2*d, retryMax) }

// health logs a loop's failures once per change of state, not once per
// attempt: the first error, then the recovery. One goroutine owns each.
type health struct {
	log     *slog.Logger
	what    string
	failing bool
}

func (h *health) fail(err error) {
	if h.failing {
		return
	}
	h.failing = true
	h.log.Error("maintenance: "+h.what+" failing; retrying with backoff", "err", err)
}

func (h *health) ok() {
	if !h.failing {
		return
	}
	h.failing = false
	h.log.Info("maintenance: " + h.what + " recovered")
}
