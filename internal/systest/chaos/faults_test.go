package chaos

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"syscall"
	"time"
)

// faultKind names a kind of fault.
type faultKind string

// The faults the tier injects.
const (
	// A node SIGKILLed, started again after hold.
	faultNodeKill faultKind = "node-kill"
	// PostgreSQL stopped at once, as by a crash, and started again
	// (pg_ctl restart -m immediate).
	faultPGRestart faultKind = "pg-restart"
	// pg_terminate_backend on every jobd session, several times in a row.
	faultTerminate faultKind = "terminate-backends"
	// Idle superuser sessions up to max_connections minus the reserved
	// slots, held for hold; jobd's sessions are terminated as it starts,
	// so that the nodes must connect again into a full server.
	faultExhaust faultKind = "connection-exhaustion"
	// A REPEATABLE READ transaction holding its snapshot (and so the
	// vacuum horizon) for hold.
	faultHorizon faultKind = "vacuum-horizon-pin"
	// An exec worker SIGKILLed: it vanishes with its jobs; a new
	// instance starts after hold.
	faultWorkerKill faultKind = "worker-kill"
	// An exec worker SIGSTOPped for hold, past its leases, then
	// SIGCONTed: it wakes up holding leases the reaper took back.
	faultWorkerHang faultKind = "worker-hang"
	// An exec worker SIGTERMed: it releases its jobs as it stops; a new
	// instance starts.
	faultWorkerTerm faultKind = "worker-term"
	// A Go worker cut off from every node for hold, past its leases.
	faultPartition faultKind = "worker-partition"
)

// faultKinds lists them in the report's order.
var faultKinds = []faultKind{faultNodeKill, faultPGRestart, faultTerminate, faultExhaust, faultHorizon,
	faultWorkerKill, faultWorkerHang, faultWorkerTerm, faultPartition}

// fault is one fault of the plan.
type fault struct {
	kind   faultKind
	at     time.Duration // from the start of the run
	target int           // the node, exec worker or Go worker
	hold   time.Duration
}

// roundLength is the length of one round of the plan: every kind of
// fault but the node kills (which come every few seconds) strikes once
// a round.
const roundLength = 40 * time.Second

// planFaults draws the faults of the run from the seed.
func planFaults(cfg config) []fault {
	rng := rand.New(rand.NewPCG(cfg.seed, 1))
	between := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	rounds := max(1, int(cfg.window/roundLength))
	round := cfg.window / time.Duration(rounds)
	hangHold := leaseTTL + 3*reaperInterval
	var plan []fault
	for r := range rounds {
		base := time.Duration(r) * round
		// Nodes: one killed every 3 to 6 s, down for up to 1.5 s.
		for at := base + between(time.Second, 3*time.Second); at < base+round-6*time.Second; at += between(3*time.Second, 6*time.Second) {
			plan = append(plan, fault{kind: faultNodeKill, at: at, target: rng.IntN(nodeCount),
				hold: between(200*time.Millisecond, 1500*time.Millisecond)})
		}
		// The database, one fault after the other, a quarter of the round
		// apart, in a random order.
		db := []faultKind{faultPGRestart, faultTerminate, faultExhaust}
		rng.Shuffle(len(db), func(i, j int) { db[i], db[j] = db[j], db[i] })
		for i, k := range db {
			f := fault{kind: k, at: base + round*time.Duration(i+1)/4 + between(-2*time.Second, 2*time.Second)}
			switch k {
			case faultTerminate:
				f.target = 3 + rng.IntN(3) // the burst's rounds
			case faultExhaust:
				f.hold = between(3*time.Second, 6*time.Second)
			}
			plan = append(plan, f)
		}
		plan = append(plan, fault{kind: faultHorizon, at: base + between(time.Second, round/3),
			hold: between(round/4, round/2)})
		// Workers: the three exec workers each meet one of kill, hang
		// and term; one Go worker is cut off.
		slots := rng.Perm(execCount)
		plan = append(plan,
			fault{kind: faultWorkerKill, at: base + between(2*time.Second, round-8*time.Second), target: slots[0],
				hold: between(time.Second, 3*time.Second)},
			fault{kind: faultWorkerHang, at: base + between(2*time.Second, round-hangHold-3*time.Second), target: slots[1],
				hold: hangHold},
			fault{kind: faultWorkerTerm, at: base + between(2*time.Second, round-8*time.Second), target: slots[2]},
			fault{kind: faultPartition, at: base + between(2*time.Second, round-hangHold-4*time.Second), target: rng.IntN(goCount),
				hold: hangHold},
		)
	}
	// The end: just before the faults stop, after the last node restart
	// (each start of a node rescues what expired), an exec worker dies
	// and a Go worker is cut off. The leases they hold expire after the
	// faults stopped, and only the nodes' periodic reapers can take them
	// back: this is what the quiet bound measures.
	plan = append(plan,
		fault{kind: faultPartition, at: cfg.window - 2500*time.Millisecond, target: rng.IntN(goCount), hold: 2 * time.Second},
		fault{kind: faultWorkerKill, at: cfg.window - 2*time.Second, target: rng.IntN(execCount), hold: time.Second},
	)
	sort.SliceStable(plan, func(i, j int) bool { return plan[i].at < plan[j].at })
	return plan
}

// injected is what became of one fault.
type injected struct {
	fault
	start, end time.Time // end: recovered (the node serving again…)
	detail     string
	skipped    bool
	err        error
}

// injector carries out the plan.
type injector struct {
	h *harness

	// dbLane runs the database faults (but the horizon pin) one at a
	// time; nodeLane picks the node to kill among those up.
	dbLane, nodeLane sync.Mutex

	mu  sync.Mutex
	log []injected
}

// run injects every fault of plan at its time from start, and returns
// once each has ended and the system recovered from it (the nodes and
// workers it stopped run again, the database answers).
func (in *injector) run(start time.Time, plan []fault) {
	var wg sync.WaitGroup
	for _, f := range plan {
		wg.Go(func() {
			if d := time.Until(start.Add(f.at)); d > 0 {
				time.Sleep(d) // the plan's schedule
			}
			if f.kind == faultPGRestart || f.kind == faultTerminate || f.kind == faultExhaust {
				in.dbLane.Lock()
				defer in.dbLane.Unlock()
			}
			r := injected{fault: f, start: time.Now()}
			r.detail, r.skipped, r.err = in.inject(f)
			r.end = time.Now()
			in.mu.Lock()
			in.log = append(in.log, r)
			in.mu.Unlock()
		})
	}
	wg.Wait()
}

// inject carries out one fault and waits for its recovery.
func (in *injector) inject(f fault) (detail string, skipped bool, err error) {
	h := in.h
	switch f.kind {
	case faultNodeKill:
		return in.killNode(f)
	case faultPGRestart:
		if err := h.pg.Restart(); err != nil {
			return "", false, err
		}
		return "stopped at once and started again", false, nil
	case faultTerminate:
		return h.db.terminateBurst(f.target)
	case faultExhaust:
		return h.db.exhaust(f.hold)
	case faultHorizon:
		return h.db.pinHorizon(f.hold)
	case faultWorkerKill:
		w := h.execs[f.target]
		name := w.name()
		w.current().kill()
		time.Sleep(f.hold) // how long it stays away
		return fmt.Sprintf("%s killed, back as the next instance after %s", name, f.hold), false, w.start()
	case faultWorkerHang:
		w := h.execs[f.target]
		p := w.current()
		p.signal(syscall.SIGSTOP)
		time.Sleep(f.hold)
		p.signal(syscall.SIGCONT)
		return fmt.Sprintf("%s stopped for %s", w.name(), f.hold), false, nil
	case faultWorkerTerm:
		w := h.execs[f.target]
		name := w.name()
		stopped, err := w.current().stop(30 * time.Second)
		if !stopped || err != nil {
			h.errorf("%s at SIGTERM: %v", name, err)
		}
		return fmt.Sprintf("%s stopped gracefully", name), false, w.start()
	case faultPartition:
		g := h.gos[f.target]
		h.front.partition(g.who, true)
		time.Sleep(f.hold)
		h.front.partition(g.who, false)
		return fmt.Sprintf("%s cut off for %s", g.who, f.hold), false, nil
	}
	return "", false, fmt.Errorf("unknown fault %q", f.kind)
}

// killNode kills the planned node, or the next one up if it is down
// already (none: the fault is skipped), and starts it again after the
// fault's hold, waiting until it serves.
func (in *injector) killNode(f fault) (string, bool, error) {
	in.nodeLane.Lock()
	var n *node
	for i := range nodeCount {
		if c := in.h.nodes[(f.target+i)%nodeCount]; c.isUp() {
			n = c
			break
		}
	}
	if n == nil {
		in.nodeLane.Unlock()
		return "every node was down already", true, nil
	}
	n.kill()
	in.nodeLane.Unlock()
	time.Sleep(f.hold) // how long it stays down
	t0 := time.Now()
	if err := n.start(in.h.ctx); err != nil {
		return "", false, err
	}
	return fmt.Sprintf("%s down %s, serving again %s after its start", n.name, f.hold, time.Since(t0).Round(time.Millisecond)), false, nil
}

// injections returns what was injected, in the order of the plan.
func (in *injector) injections() []injected {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := append([]injected(nil), in.log...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}
