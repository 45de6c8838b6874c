package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// checked sums up what the checks went through, for the figures.
type checked struct {
	spans int
	ends  map[string]int // claims by the event that ended them
	// accepted counts the outcomes (complete, fail, release) that a worker
	// had answered 2xx and the journal shows; unacknowledged those the
	// journal shows whose worker never had a 2xx answer (none came, or a
	// 5xx while the database went away as it committed).
	accepted, unacknowledged int
	// lockSpans and lockRuns are the claims (the database's record) and
	// the accepted executions (the workers' records) checked for overlaps
	// under a lock_key.
	lockSpans, lockRuns int
	// latest is how long after the faults stopped the last claim made
	// before then ended.
	latest time.Duration
	wf     wfChecked
}

// leaseOf is a lease token as a claim handed it out.
type leaseOf struct {
	who     string
	job     uuid.UUID
	attempt int
}

// check judges the evidence; every violation fails the test through
// h.errorf, with what shows it.
func (ev *evidence) check(h *harness) checked {
	c := checked{ends: make(map[string]int)}
	specs := ev.checkSubmissions(h)
	spansOf := ev.checkJobs(h, specs, &c)
	holdsOf := ev.checkJournal(h, spansOf)
	leases := ev.checkLeases(h)
	ev.checkOutcomes(h, spansOf, leases, &c)
	ev.checkLocks(h, holdsOf, leases, &c)
	ev.checkQuiet(h, holdsOf, &c)
	ev.checkAnswers(h)
	c.wf = ev.checkWorkflows(h)
	for _, n := range h.nodes {
		n.mu.Lock()
		for _, crash := range n.crashes {
			h.errorf("node %s crashed: %s", n.name, crash)
		}
		n.mu.Unlock()
	}
	for _, w := range h.execs {
		w.mu.Lock()
		for _, crash := range w.crashes {
			h.errorf("exec worker %d: %s", w.slot, crash)
		}
		w.mu.Unlock()
	}
	return c
}

// checkSubmissions: every job of the workload was submitted, once: each
// idempotency key always answered with the same job, created at most
// once, and no job exists that no key or workflow made.
func (ev *evidence) checkSubmissions(h *harness) map[string]jobSpec {
	specs := make(map[string]jobSpec, len(ev.specs))
	for _, sp := range ev.specs {
		specs[sp.key] = sp
	}
	for _, e := range ev.submitErrs {
		h.errorf("a submission failed for good: %s", e)
	}
	byKey := make(map[string]uuid.UUID)
	for id, r := range ev.jobs {
		if ev.wf.tasks[id] {
			continue // a workflow's task: checkWorkflows
		}
		k := r.job.IdempotencyKey
		if _, ok := specs[k]; !ok {
			h.errorf("job %s (%s) was made by no submission of the workload (idempotency key %q)", id, r.job.Queue, k)
			continue
		}
		if other, dup := byKey[k]; dup {
			h.errorf("idempotency key %s made two jobs: %s and %s", k, other, id)
		}
		byKey[k] = id
	}
	for _, sp := range ev.specs {
		answers := ev.answers[sp.key]
		if len(answers) == 0 {
			h.errorf("job %s was never submitted", sp.key)
			continue
		}
		created := 0
		for _, a := range answers {
			if a.id != answers[0].id {
				h.errorf("idempotency key %s answered with two jobs: %s and %s", sp.key, answers[0].id, a.id)
			}
			if a.created {
				created++
			}
		}
		if created > 1 {
			h.errorf("idempotency key %s answered 201 (created) %d times", sp.key, created)
		}
		if id, ok := byKey[sp.key]; !ok || id != answers[0].id {
			h.errorf("idempotency key %s: answered job %s, the server lists %s", sp.key, answers[0].id, id)
		}
	}
	return specs
}

// checkJobs: every job is final, succeeded unless it was meant to fail,
// with one succeeded event exactly when it succeeded, and a journal whose
// claims and ends alternate. It returns the claims of every job.
func (ev *evidence) checkJobs(h *harness, specs map[string]jobSpec, c *checked) map[uuid.UUID][]span {
	spansOf := make(map[uuid.UUID][]span, len(ev.jobs))
	for id, r := range ev.jobs {
		j := r.job
		sp, succeeded, err := spans(r)
		if err != nil {
			h.errorf("job %s: journal: %v", id, err)
		}
		spansOf[id] = sp
		c.spans += len(sp)
		for _, s := range sp {
			c.ends[s.end]++
		}
		spec, ok := specs[j.IdempotencyKey]
		switch {
		case !ok:
		case !j.State.Final():
			h.errorf("job %s (%s, %s) is %s after the drain (attempt %d, lease owner %q)", id, j.Queue, spec.mode, j.State, j.Attempt, j.LeaseOwner)
		case spec.failsByDesign() && j.State != api.StateFailed:
			h.errorf("job %s (%s, %s) is %s, want failed", id, j.Queue, spec.mode, j.State)
		case !spec.failsByDesign() && j.State != api.StateSucceeded:
			h.errorf("job %s (%s, %s) is %s, want succeeded (attempt %d of %d, error %q)", id, j.Queue, spec.mode, j.State, j.Attempt, j.MaxAttempts, j.Error)
		}
		want := 0
		if j.State == api.StateSucceeded {
			want = 1
		}
		if succeeded != want {
			h.errorf("job %s is %s with %d succeeded events in its journal, want %d", id, j.State, succeeded, want)
		}
		if n := len(sp); n > 0 && sp[n-1].end == "" {
			h.errorf("job %s is %s with its claim of attempt %d still open in its journal", id, j.State, sp[n-1].attempt)
		}
		if j.State == api.StateSucceeded && (len(sp) == 0 || sp[len(sp)-1].end != "succeeded") {
			h.errorf("job %s succeeded, but its journal does not end with the success of a claim", id)
		}
	}
	return spansOf
}

// endStates are the states a claim's ending event may leave its job in.
var endStates = map[string][]string{
	"succeeded": {"succeeded"}, "failed": {"failed"}, "canceled": {"canceled"},
	"retried": {"queued"}, "requeued": {"queued"}, "rescued": {"queued"},
	"timed-out": {"queued", "failed"},
}

// checkJournal: the journal shows every claim the database's record
// shows, by the same holder, for the same attempt, ended the same way,
// and nothing else. It returns the database's record of the claims.
func (ev *evidence) checkJournal(h *harness, spansOf map[uuid.UUID][]span) map[uuid.UUID][]hold {
	holdsOf := make(map[uuid.UUID][]hold, len(ev.jobs))
	for id := range ev.jobs {
		hs, err := holds(ev.transitions[id])
		if err != nil {
			h.errorf("job %s: its transitions: %v", id, err)
		}
		holdsOf[id] = hs
		sp := spansOf[id]
		if len(sp) != len(hs) {
			h.errorf("job %s: the journal shows %d claims, the database made %d", id, len(sp), len(hs))
			continue
		}
		for i, s := range sp {
			d := hs[i]
			if s.attempt != d.attempt || s.owner != d.owner || !slices.Contains(endStates[s.end], d.end) {
				h.errorf("job %s: claim %d is attempt %d by %s ended %s in the journal, attempt %d by %s ended %s in the database",
					id, i+1, s.attempt, s.owner, s.end, d.attempt, d.owner, d.end)
			}
		}
	}
	return holdsOf
}

// checkLeases: every lease token a worker presented was handed out by a
// claim, to that worker, for that job; no token was handed out twice.
// It returns the tokens.
func (ev *evidence) checkLeases(h *harness) map[uuid.UUID]leaseOf {
	leases := make(map[uuid.UUID]leaseOf)
	for _, ex := range ev.exchanges {
		if ex.route != routeClaim || ex.status != 200 {
			continue
		}
		for _, cj := range ex.claimed {
			if prev, dup := leases[cj.token]; dup {
				h.errorf("lease token %s handed out twice: job %s to %s, job %s to %s", cj.token, prev.job, prev.who, cj.id, ex.who)
			}
			leases[cj.token] = leaseOf{who: ex.who, job: cj.id, attempt: cj.attempt}
		}
	}
	for _, ex := range ev.exchanges {
		if ex.job == uuid.Nil {
			continue
		}
		l, ok := leases[ex.token]
		switch {
		case !ok:
			h.errorf("%s sent %s of job %s with lease token %s, which no claim handed out", ex.who, ex.route, ex.job, ex.token)
		case l.job != ex.job || l.who != ex.who:
			h.errorf("%s sent %s of job %s with the lease token of job %s handed to %s", ex.who, ex.route, ex.job, l.job, l.who)
		}
	}
	return leases
}

// wantRoute is the worker's call that ends a claim with the event end.
var wantRoute = map[string]route{
	"succeeded": routeComplete, "retried": routeFail, "failed": routeFail, "requeued": routeRelease,
}

// checkOutcomes ties the workers' outcome calls to the journal, on the
// remote queues: each lease had at most one outcome accepted (answered
// 2xx; an outcome sent again after its answer was lost is answered 2xx
// as a repeat, which does not count), each job at most one accepted
// completion, every accepted outcome
// is the end of its claim in the journal, and every claim the journal
// ends by a worker's outcome was ended by that worker's call.
func (ev *evidence) checkOutcomes(h *harness, spansOf map[uuid.UUID][]span, leases map[uuid.UUID]leaseOf, c *checked) {
	calls := make(map[uuid.UUID][]exchange) // by job
	acceptedByToken := make(map[uuid.UUID]int)
	for _, ex := range ev.exchanges {
		if !ex.route.outcome() {
			continue
		}
		calls[ex.job] = append(calls[ex.job], ex)
		if accepted(ex) && !ex.repeat {
			acceptedByToken[ex.token]++
		}
	}
	for token, n := range acceptedByToken {
		if n > 1 {
			h.errorf("lease token %s (job %s) had %d outcomes accepted", token, leases[token].job, n)
		}
	}
	workers := make(map[string]bool)
	for _, id := range ev.workerOf {
		workers[id] = true
	}
	for id, r := range ev.jobs {
		if r.job.Queue == queueInproc {
			continue
		}
		completes := 0
		matched := make(map[int]bool) // indexes into calls[id]
		for _, ex := range calls[id] {
			if ex.route == routeComplete && accepted(ex) && !ex.repeat {
				completes++
				if r.job.State != api.StateSucceeded {
					h.errorf("job %s is %s, but %s's complete (attempt %d) was accepted", id, r.job.State, ex.who, leases[ex.token].attempt)
				}
			}
		}
		if completes > 1 {
			h.errorf("job %s had %d completions accepted", id, completes)
		}
		for _, s := range spansOf[id] {
			if s.end != "" && s.end != "rescued" && !workers[s.owner] {
				h.errorf("job %s of remote queue %s: claim of attempt %d by %q, which is no remote worker", id, r.job.Queue, s.attempt, s.owner)
				continue
			}
			want, ok := wantRoute[s.end]
			if !ok || (s.end == "failed" && s.detail == job.LeaseExpired) {
				continue // rescued, timed out, or failed by the reaper: no worker's doing
			}
			var ok2xx, unknown bool
			var seen []string
			for i, ex := range calls[id] {
				l := leases[ex.token]
				if ex.route != want || ev.workerOf[ex.who] != s.owner || l.attempt != s.attempt {
					continue
				}
				seen = append(seen, answerOf(ex))
				switch {
				case accepted(ex):
					ok2xx, matched[i] = true, true
				case ex.status == 0 || ex.status >= 500:
					unknown = true
				}
			}
			switch {
			case ok2xx:
				c.accepted++
			case unknown:
				c.unacknowledged++
			default:
				h.errorf("job %s: the journal ends attempt %d of %s with %s, but that worker's %s calls got %v",
					id, s.attempt, s.owner, s.end, want, seen)
			}
		}
		for i, ex := range calls[id] {
			if accepted(ex) && !matched[i] {
				h.errorf("job %s: %s's %s of attempt %d was accepted (%d), but the journal shows no such end of that claim",
					id, ex.who, ex.route, leases[ex.token].attempt, ex.status)
			}
		}
	}
}

// accepted reports whether an outcome call was answered 2xx.
func accepted(ex exchange) bool { return ex.status >= 200 && ex.status < 300 }

func answerOf(ex exchange) string {
	if ex.status == 0 {
		return "no answer (" + ex.err + ")"
	}
	if ex.problem != "" {
		return fmt.Sprintf("%d %s", ex.status, strings.TrimPrefix(ex.problem, "https://jobd.dev/problems/"))
	}
	return fmt.Sprint(ex.status)
}

// checkLocks: no two claims under one lock_key overlap, from the commit
// of one's claim to the commit of its end, in the database's record
// (which the journal matches: jobd never handed a key out twice at
// once, to a node or a worker); and no two executions under one
// lock_key whose outcome was accepted overlap in the workers' own
// records. A worker that lost its lease may still run when the next
// holder starts; its outcome is refused, so it is not among them.
func (ev *evidence) checkLocks(h *harness, holdsOf map[uuid.UUID][]hold, leases map[uuid.UUID]leaseOf, c *checked) {
	type interval struct {
		from, to int64 // microseconds
		what     string
	}
	overlaps := func(source, key string, ivs []interval) {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].from < ivs[j].from })
		var last *interval // the one that ends last so far
		for i := range ivs {
			iv := &ivs[i]
			if last != nil && iv.from < last.to {
				h.errorf("lock_key %s (%s): %s began %s before %s ended",
					key, source, iv.what, time.Duration(last.to-iv.from)*time.Microsecond, last.what)
			}
			if last == nil || iv.to > last.to {
				last = iv
			}
		}
	}
	stamp := func(t time.Time) string { return t.Format("15:04:05.000000") }
	claims := make(map[string][]interval)
	for id, r := range ev.jobs {
		if r.job.LockKey == "" {
			continue
		}
		for _, d := range holdsOf[id] {
			to := d.to.UnixMicro()
			if d.end == "" {
				to = 1<<63 - 1
			}
			claims[r.job.LockKey] = append(claims[r.job.LockKey], interval{d.from.UnixMicro(), to,
				fmt.Sprintf("job %s's claim of attempt %d by %s (committed %s, ended %s at %s)", id, d.attempt, d.owner, stamp(d.from), d.end, stamp(d.to))})
			c.lockSpans++
		}
	}
	for key, ivs := range claims {
		overlaps("claims", key, ivs)
	}

	// The workers' records: the executions whose outcome was accepted.
	type runKey struct {
		who     string
		job     uuid.UUID
		attempt int
	}
	tokenOf := make(map[runKey]uuid.UUID)
	for token, l := range leases {
		tokenOf[runKey(l)] = token
	}
	acceptedCall := make(map[uuid.UUID]exchange)
	for _, ex := range ev.exchanges {
		if (ex.route == routeComplete || ex.route == routeFail) && accepted(ex) {
			acceptedCall[ex.token] = ex
		}
	}
	ran := make(map[uuid.UUID]bool)
	records := make(map[string][]interval)
	for _, run := range ev.runs {
		token := run.token
		if token == uuid.Nil {
			var ok bool
			if token, ok = tokenOf[runKey{run.who, run.job, run.attempt}]; !ok {
				h.errorf("%s ran job %s attempt %d, which no claim of its handed it", run.who, run.job, run.attempt)
				continue
			}
		}
		ex, ok := acceptedCall[token]
		if !ok {
			continue
		}
		ran[token] = true
		if run.end == 0 {
			h.errorf("%s's %s of job %s attempt %d was accepted, but its execution recorded no end", run.who, ex.route, run.job, run.attempt)
			continue
		}
		r := ev.jobs[run.job]
		if r == nil || r.job.LockKey == "" {
			continue
		}
		records[r.job.LockKey] = append(records[r.job.LockKey], interval{run.start, run.end,
			fmt.Sprintf("%s's run of job %s attempt %d (%s–%s, %s accepted)", run.who, run.job, run.attempt,
				stamp(time.UnixMicro(run.start)), stamp(time.UnixMicro(run.end)), ex.route)})
		c.lockRuns++
	}
	for token, ex := range acceptedCall {
		if !ran[token] {
			h.errorf("%s's %s of job %s (attempt %d) was accepted, but no execution of it is recorded", ex.who, ex.route, ex.job, leases[token].attempt)
		}
	}
	for key, ivs := range records {
		overlaps("workers' records", key, ivs)
	}
}

// checkQuiet: once the faults stopped, nothing stayed running past its
// lease plus the reaper interval (and quietSlack): every claim committed
// before the quiet point ended (committed its end) within that bound
// after it.
func (ev *evidence) checkQuiet(h *harness, holdsOf map[uuid.UUID][]hold, c *checked) {
	bound := leaseTTL + reaperInterval + quietSlack
	for id, hs := range holdsOf {
		for _, s := range hs {
			if !s.from.Before(ev.quiet) || s.end == "" {
				continue
			}
			after := s.to.Sub(ev.quiet)
			c.latest = max(c.latest, after)
			if after > bound {
				h.errorf("job %s: the claim of attempt %d by %s, made %s before the faults stopped, ended (%s) %s after they stopped: over the bound of %s (lease %s + reaper %s + slack %s)",
					id, s.attempt, s.owner, ev.quiet.Sub(s.from).Round(time.Millisecond), s.end, after.Round(time.Millisecond),
					bound, leaseTTL, reaperInterval, quietSlack)
			}
		}
	}
}

// knownDefect is a defect the tier found and reported that is not fixed
// yet: the answers it explains are counted in the figures instead of
// failing the run. Remove it with its fix.
type knownDefect struct {
	name    string
	matches func(exchange) bool
}

// knownDefects lists the defects the tier found that are not fixed yet:
// none. (The first, a 500 on a claim over several queues that lost a
// race for a lock_key, is fixed: such a claim retries from a savepoint.)
var knownDefects []knownDefect

// knownDefectOf returns the known defect that explains ex, if one does.
func knownDefectOf(ex exchange) (knownDefect, bool) {
	for _, d := range knownDefects {
		if d.matches(ex) {
			return d, true
		}
	}
	return knownDefect{}, false
}

// checkAnswers: the only 5xx a caller met is 503 (the database does not
// answer, or back-pressure): a 500 is a fault of the server.
func (ev *evidence) checkAnswers(h *harness) {
	seen := make(map[string]int)
	var order []string
	for _, ex := range ev.exchanges {
		if ex.status < 500 || ex.problem == api.ProblemUnavailable || ex.problem == api.ProblemBusy {
			continue
		}
		if _, known := knownDefectOf(ex); known {
			continue
		}
		k := fmt.Sprintf("%s %s: %d %s %q", sideOf(ex.who), ex.route, ex.status, ex.problem, ex.detail)
		if seen[k] == 0 {
			order = append(order, k)
		}
		seen[k]++
	}
	for _, k := range order {
		h.errorf("%d× %s", seen[k], k)
	}
}
