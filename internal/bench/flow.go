package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/store"
)

// ModeFlow is run only when asked for by name: the throughput of a
// backlog spread over many partition_keys, in the bench queue without
// limits and then under a partition_limit (and a global_limit when
// Config.GlobalLimit asks for one).
const ModeFlow = "flow"

// restoreTimeout bounds the flow mode's reset of the bench queue's
// limits, which runs on a fresh context after a cancel.
const restoreTimeout = 30 * time.Second

// flowStep is one backlog of the flow mode, worked under limits.
type flowStep struct {
	name   string // the figures are flow.name.*
	limits flow.Limits
}

// flowBench works a backlog of cfg.Jobs no-op jobs spread round-robin
// over cfg.Partitions partition_keys, once per step: the bench queue
// without limits, with partition_limit cfg.PartitionLimit, and with
// global_limit cfg.GlobalLimit if that is set, each job held cfg.Hold
// (none: a no-op). The handlers count what
// runs at once, per partition and in all: a limited step reports the
// most it saw (flow.partition_limit.max_running_per_partition,
// flow.global_limit.max_running), which shows the limit held. The bench
// queue gets back the limits it had, even when the run fails or ctx is
// cancelled.
func flowBench(ctx context.Context, cfg Config, w io.Writer) (figs []Figure, err error) {
	found, err := queueLimits(ctx, cfg.Store)
	if err != nil {
		return nil, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
		defer cancel()
		if rerr := cfg.Store.QueueSetLimits(rctx, Queue, found); rerr != nil && err == nil {
			err = fmt.Errorf("restore the bench queue's limits: %w", rerr)
		}
	}()
	steps := []flowStep{
		{"unlimited", flow.Limits{}},
		{"partition_limit", flow.Limits{PartitionLimit: cfg.PartitionLimit}},
	}
	if cfg.GlobalLimit > 0 {
		steps = append(steps, flowStep{"global_limit", flow.Limits{GlobalLimit: cfg.GlobalLimit}})
	}
	for _, step := range steps {
		if err := purge(ctx, cfg.Store); err != nil {
			return figs, err
		}
		if err := cfg.Store.QueueSetLimits(ctx, Queue, step.limits); err != nil {
			return figs, fmt.Errorf("set the bench queue's limits to %s: %w", step.limits, err)
		}
		name := "flow." + step.name
		seen := runningCounter{hold: cfg.Hold}
		more, _, err := workBacklog(ctx, cfg, w, backlogRun{name: name, partitions: cfg.Partitions, hook: seen.hook})
		figs = append(figs, more...)
		if err != nil {
			return figs, err
		}
		perPartition, all := seen.maxima()
		figs = append(figs, report(w, Figure{name + ".max_running_per_partition", float64(perPartition), "jobs"}))
		if step.limits.GlobalLimit > 0 {
			figs = append(figs, report(w, Figure{name + ".max_running", float64(all), "jobs"}))
		}
	}
	return figs, nil
}

// queueLimits returns the bench queue's stored limits (none when it has
// no settings).
func queueLimits(ctx context.Context, s store.QueueStore) (flow.Limits, error) {
	all, err := s.QueueSettings(ctx)
	if err != nil {
		return flow.Limits{}, fmt.Errorf("read the bench queue's limits: %w", err)
	}
	for _, q := range all {
		if q.Name == Queue {
			return q.Limits, nil
		}
	}
	return flow.Limits{}, nil
}

// runningCounter counts the handlers running at once, per partition_key
// and in all, and keeps the most it has seen of each.
type runningCounter struct {
	hold            time.Duration // how long each job runs
	mu              sync.Mutex
	running         map[string]int
	total           int
	maxPerPartition int
	maxTotal        int
}

// hook is a jobHook that counts the job as running until its handler
// returns, c.hold after it started.
func (c *runningCounter) hook(j *engine.Job[json.RawMessage]) func() {
	key := j.PartitionKey
	c.mu.Lock()
	if c.running == nil {
		c.running = make(map[string]int)
	}
	c.running[key]++
	c.total++
	c.maxPerPartition = max(c.maxPerPartition, c.running[key])
	c.maxTotal = max(c.maxTotal, c.total)
	c.mu.Unlock()
	if c.hold > 0 {
		time.Sleep(c.hold)
	}
	return func() {
		c.mu.Lock()
		c.running[key]--
		c.total--
		c.mu.Unlock()
	}
}

// maxima returns the most handlers seen running at once in one partition
// and in all.
func (c *runningCounter) maxima() (perPartition, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxPerPartition, c.maxTotal
}
