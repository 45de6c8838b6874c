package surface_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// fingerprint is a cheap summary of what requests can change in the
// database (five store reads: the queues' limits come with their list), taken before a write and compared after
// it when it was refused. It leaves out what the node's own background
// work changes while the test runs: the states of the jobs of the queues
// its engine works (their number per queue stays), worker statuses and
// heartbeats, and the processes while one of their tasks is pending.
type fingerprint struct {
	jobs      []string // "queue state count", or "queue * count" for a worked queue
	paused    []string
	limits    []string // "queue limits" of the limited queues
	keys      []string
	workers   []string
	processes string // "" while a process task is pending
	lease     string // the fixture worker's held job, in full
}

// workedQueues are the queues the node's engine works.
var workedQueues = []string{gateway.Queue, process.DefaultQueue}

// fingerprint reads the database's fingerprint; l is the held lease (nil
// for none).
func (n *node) fingerprint(l *lease) (fingerprint, error) {
	ctx := context.Background()
	var f fingerprint
	qs, err := n.st.QueueList(ctx)
	if err != nil {
		return f, err
	}
	pendingTasks := false
	for _, q := range qs {
		if q.Paused {
			f.paused = append(f.paused, q.Name)
		}
		if q.Limits.Limited() {
			f.limits = append(f.limits, fmt.Sprintf("%q %s", q.Name, q.Limits))
		}
		worked := slices.Contains(workedQueues, q.Name)
		var all int64
		for st, c := range q.Counts {
			all += c
			if !worked && c > 0 {
				f.jobs = append(f.jobs, fmt.Sprintf("%q %s %d", q.Name, st, c))
			}
		}
		if worked {
			f.jobs = append(f.jobs, fmt.Sprintf("%q * %d", q.Name, all))
		}
		if q.Name == process.DefaultQueue && q.Counts[job.StateQueued]+q.Counts[job.StateRunning] > 0 {
			pendingTasks = true
		}
	}
	slices.Sort(f.jobs)
	slices.Sort(f.paused)
	slices.Sort(f.limits)
	keys, err := n.st.KeyList(ctx)
	if err != nil {
		return f, err
	}
	for _, k := range keys {
		f.keys = append(f.keys, fmt.Sprintf("%s %s %v %s", k.ID, k.Name, k.Scopes, k.WorkerID))
	}
	ws, err := n.st.WorkerList(ctx)
	if err != nil {
		return f, err
	}
	for _, w := range ws {
		f.workers = append(f.workers, fmt.Sprintf("%s %q %v %s %v", w.ID, w.Name, w.Capabilities, w.Metadata, w.Disabled))
	}
	if !pendingTasks {
		ps, total, err := n.st.ProcessList(ctx, store.ProcessListParams{Namespace: namespace, Limit: 1000})
		if err != nil {
			return f, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%d:", total)
		for _, p := range ps {
			fmt.Fprintf(&b, " %s/%s/%d/%s", p.ID, p.Status, p.LastEventID, p.AuxState)
		}
		f.processes = b.String()
	}
	if l != nil {
		j, err := n.st.JobGet(ctx, uuid.MustParse(l.id))
		if errors.Is(err, job.ErrNotFound) {
			f.lease = "gone"
		} else if err != nil {
			return f, err
		} else {
			f.lease = fmt.Sprintf("%s a%d %s exp=%v hb=%v up=%v %+v cp=%s res=%s err=%q cancel=%v",
				j.State, j.Attempt, j.LeaseToken, j.LeaseExpiresAt, j.HeartbeatAt, j.UpdatedAt,
				j.Progress, j.Checkpoint, j.Result, j.LastError, j.CancelRequested)
		}
	}
	return f, nil
}

// diff says how b differs from a; "" when it does not.
func (a fingerprint) diff(b fingerprint) string {
	var out []string
	cmp := func(what string, x, y []string) {
		if !slices.Equal(x, y) {
			out = append(out, fmt.Sprintf("%s %v → %v", what, x, y))
		}
	}
	cmp("jobs", a.jobs, b.jobs)
	cmp("paused queues", a.paused, b.paused)
	cmp("queue limits", a.limits, b.limits)
	cmp("keys", a.keys, b.keys)
	cmp("workers", a.workers, b.workers)
	if a.processes != "" && b.processes != "" && a.processes != b.processes {
		out = append(out, fmt.Sprintf("processes %s → %s", a.processes, b.processes))
	}
	if a.lease != b.lease {
		out = append(out, fmt.Sprintf("held job %s → %s", a.lease, b.lease))
	}
	return strings.Join(out, "; ")
}
