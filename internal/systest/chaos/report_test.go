package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// figures are a run's numbers, logged at its end (go test -v shows them;
// a failed run always does).
type figures struct {
	cfg                                            config
	began, ready, start, quiet, submitted, drained time.Time
	injections                                     []injected
	ev                                             *evidence
	checked                                        checked
	nodes                                          []*node
	drain                                          []drainSample
	failures                                       int
}

// sideOf names the kind of caller who is.
func sideOf(who string) string {
	switch {
	case who == "client":
		return "clients"
	case strings.HasPrefix(who, "go-"):
		return "Go workers"
	case strings.HasPrefix(who, "exec-"):
		return "exec workers"
	}
	return who
}

// transportCause names why a request got no answer.
func transportCause(err string) string {
	switch {
	case strings.Contains(err, "partition"):
		return "cut off by a partition fault"
	case strings.Contains(err, "connection refused"):
		return "connection refused by every node"
	case strings.Contains(err, "reset by peer"):
		return "connection reset (its node was killed)"
	case strings.Contains(err, "EOF"):
		return "connection closed before the answer (its node was killed)"
	case strings.Contains(err, "context canceled"):
		return "given up by the caller (its worker stopped or was killed)"
	case strings.Contains(err, "deadline exceeded"):
		return "timed out"
	}
	return err
}

// counter counts strings and lists them in their first order.
type counter struct {
	n     map[string]int
	order []string
}

func (c *counter) add(k string) {
	c.addN(k, 1)
}

func (c *counter) addN(k string, n int) {
	if c.n == nil {
		c.n = make(map[string]int)
	}
	if _, seen := c.n[k]; !seen {
		c.order = append(c.order, k)
	}
	c.n[k] += n
}

// lines lists the counts, the largest first.
func (c *counter) lines(indent string) string {
	keys := append([]string(nil), c.order...)
	sort.SliceStable(keys, func(i, j int) bool { return c.n[keys[i]] > c.n[keys[j]] })
	return c.linesOf(indent, keys)
}

// linesInOrder lists the counts in their first order.
func (c *counter) linesInOrder(indent string) string {
	return c.linesOf(indent, c.order)
}

func (c *counter) linesOf(indent string, keys []string) string {
	if len(keys) == 0 {
		return indent + "none\n"
	}
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s%6d  %s\n", indent, c.n[k], k)
	}
	return b.String()
}

func (f figures) log(t *testing.T) {
	t.Helper()
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	since := func(from, to time.Time) string {
		if to.IsZero() || from.IsZero() {
			return "never"
		}
		return to.Sub(from).Round(time.Millisecond).String()
	}
	ev := f.ev
	p("chaos figures, seed %d (JOBD_CHAOS_SEED=%d JOBD_CHAOS_DURATION=%s JOBD_CHAOS_RATE=%g): %d failures",
		f.cfg.seed, f.cfg.seed, f.cfg.window, f.cfg.rate, f.failures)
	p("  time: setup %s (build, PostgreSQL, nodes, workers); load and faults %s; last fault recovered at +%s; last submission answered at +%s",
		since(f.began, f.ready), f.cfg.window, since(f.start, f.quiet), since(f.start, f.submitted))
	p("  drain: every job final %s after the last fault recovered (%s after the last submission); total wall time %s",
		since(f.quiet, f.drained), since(f.submitted, f.drained), since(f.began, time.Now()))
	var curve []string
	for _, s := range f.drain {
		curve = append(curve, fmt.Sprintf("%s: %d", s.at.Sub(f.submitted).Round(time.Second), s.active))
	}
	p("  jobs queued or running after the last submission: %s", strings.Join(curve, ", "))

	var queues, states, modes counter
	specs := make(map[string]jobSpec)
	for _, sp := range ev.specs {
		specs[sp.key] = sp
	}
	for _, r := range ev.jobs {
		queues.add(r.job.Queue)
		states.add(string(r.job.State))
		if ev.wf.tasks[r.job.ID] {
			modes.add("(a workflow's task)")
		} else {
			modes.add(specs[r.job.IdempotencyKey].mode)
		}
	}
	p("  jobs: %d submitted (%d idempotent resubmissions or twins); by queue, final state, mode:", len(ev.jobs), submissions(ev)-len(ev.specs))
	b.WriteString(queues.lines("    "))
	b.WriteString(states.lines("    "))
	b.WriteString(modes.lines("    "))
	goRuns, execRuns := 0, 0
	for _, r := range ev.runs {
		if strings.HasPrefix(r.who, "go-") {
			goRuns++
		} else {
			execRuns++
		}
	}
	var ends counter
	for _, k := range []string{"succeeded", "retried", "failed", "requeued", "rescued", "canceled", ""} {
		if n := f.checked.ends[k]; n > 0 {
			name := k
			if k == "" {
				name = "still open"
			}
			ends.addN(name, n)
		}
	}
	wc := f.checked.wf
	var wfStates, taskStates counter
	for _, s := range []string{"succeeded", "failed", "canceled", "running"} {
		if n := wc.states[s]; n > 0 {
			wfStates.addN(s, n)
		}
		if n := wc.taskStates[s]; n > 0 {
			taskStates.addN(s, n)
		}
	}
	p("  workflows: %d submitted into the store (%d submissions without an answer sent again), with %d tasks; %d dependents released or canceled in their dependency's transaction, %d claims and executions checked to start after their dependencies ended; workflows and tasks by final state:",
		wc.workflows, ev.wf.tries, wc.tasks, wc.releases, wc.ordered)
	b.WriteString(wfStates.linesInOrder("    workflows "))
	b.WriteString(taskStates.linesInOrder("    tasks "))
	p("  claims in the journals: %d, ended by:", f.checked.spans)
	b.WriteString(ends.linesInOrder("    "))
	p("  executions the workers recorded: %d by Go workers, %d by exec workers", goRuns, execRuns)

	var faults counter
	for _, k := range faultKinds {
		faults.addN(string(k), 0)
	}
	for _, r := range f.injections {
		k := string(r.kind)
		if r.skipped {
			k += " (skipped: " + r.detail + ")"
		}
		faults.add(k)
	}
	starts, failed := 0, 0
	for _, n := range f.nodes {
		starts += n.starts
		failed += n.failedStarts
	}
	p("  faults injected (%d node starts, %d of which exited before serving: their database could not be reached):", starts, failed)
	b.WriteString(faults.linesInOrder("    "))

	var fives, noAnswer, lost counter
	lostLeases := make(map[uuid.UUID]bool) // by token
	for _, ex := range ev.exchanges {
		side := sideOf(ex.who)
		switch {
		case ex.status >= 500:
			fives.add(fmt.Sprintf("%s, %s: %d %s (under way: %s)", side, ex.route, ex.status,
				strings.TrimPrefix(ex.problem, "https://jobd.dev/problems/"), f.during(ex.done, databaseFaults)))
		case ex.status == 0:
			noAnswer.add(fmt.Sprintf("%s, %s: %s", side, ex.route, transportCause(ex.err)))
		case ex.problem == api.ProblemLeaseLost:
			lost.add(fmt.Sprintf("%s, %s: 409 lease-lost", side, ex.route))
			lostLeases[ex.token] = true
		}
		for _, token := range ex.lost {
			lostLeases[token] = true
		}
	}
	// A heartbeat that crossed its lease's accepted outcome says held:
	// false too: that lease was not lost.
	for _, ex := range ev.exchanges {
		if ex.route.outcome() && accepted(ex) {
			delete(lostLeases, ex.token)
		}
	}
	p("  5xx answers (the client retries each 503 after its Retry-After):")
	b.WriteString(fives.lines("    "))
	var known counter
	for _, ex := range ev.exchanges {
		if d, ok := knownDefectOf(ex); ok {
			known.add(d.name)
		}
	}
	if len(known.order) > 0 {
		p("  answers of known defects, reported and not fixed yet (they do not fail the run):")
		b.WriteString(known.lines("    "))
	}
	p("  requests without an answer:")
	b.WriteString(noAnswer.lines("    "))
	p("  leases lost: %d that workers learnt of (a heartbeat's held: false, or a 409 lease-lost), %d rescued by the reapers; calls refused for a lost lease:",
		len(lostLeases), f.checked.ends["rescued"])
	b.WriteString(lost.lines("    "))
	p("  outcomes of remote workers in the journals: %d accepted (2xx), %d applied though their worker never had a 2xx (no answer, or a 503 as the database went away)",
		f.checked.accepted, f.checked.unacknowledged)
	p("  lock_key exclusion checked over %d claims (timed by their commits) and %d executions whose outcome was accepted",
		f.checked.lockSpans, f.checked.lockRuns)
	p("  the last claim made before the faults stopped ended %s after they stopped (bound %s)",
		f.checked.latest.Round(time.Millisecond), leaseTTL+reaperInterval+quietSlack)
	p("  the faults, in order:")
	for _, r := range f.injections {
		status := r.detail
		if r.err != nil {
			status = "ERROR " + r.err.Error()
		}
		p("    +%-8s %-22s %s (took %s)", r.start.Sub(f.start).Round(100*time.Millisecond), r.kind, status, r.end.Sub(r.start).Round(time.Millisecond))
	}
	t.Log(b.String())
}

// databaseFaults are the faults that may explain an error answer. (A
// request without an answer says why itself: transportCause.)
var databaseFaults = []faultKind{faultPGRestart, faultTerminate, faultExhaust}

// during names the faults among kinds under way when a request failed
// at t (from their start to a second after their recovery): its likely
// reason.
func (f figures) during(t time.Time, kinds []faultKind) string {
	var names []string
	for _, r := range f.injections {
		if !slices.Contains(kinds, r.kind) || slices.Contains(names, string(r.kind)) {
			continue
		}
		if !t.Before(r.start) && t.Before(r.end.Add(time.Second)) {
			names = append(names, string(r.kind))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}

// submissions counts the answers the submitters had.
func submissions(ev *evidence) int {
	n := 0
	for _, a := range ev.answers {
		n += len(a)
	}
	return n
}
