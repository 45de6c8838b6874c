package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// ModeRemote is run only when asked for by name: a backlog worked by
// remote Go SDK workers over HTTP on loopback, against a whole jobd
// server in this process with authentication on, beside the in-process
// engine's figure of the same backlog; and the same number of jobs sent
// by POST /api/v1/jobs/batch, 1000 at a time, from one caller and from
// submitCallers at once.
const ModeRemote = "remote"

// The remote mode's defaults.
const (
	// DefaultRemoteWorkers is how many SDK workers work the backlog.
	DefaultRemoteWorkers = 4
	// DefaultRemoteSlots is each SDK worker's concurrency.
	DefaultRemoteSlots = 64
	// DefaultRemoteJobs is the remote mode's backlog.
	DefaultRemoteJobs = 50_000
	// submitCallers is how many callers send batches at once in the
	// batch submit step (as the backlog's insert has 4 inserters).
	submitCallers = 4
)

// Server starts a whole jobd server over st, serving HTTP on a loopback
// port with authentication by adminSecret, for the remote mode; it
// returns the server's base URL and a stop that ends it.
type Server func(ctx context.Context, st store.Store, adminSecret string) (url string, stop func() error, err error)

// remoteRun is what one run of the remote mode measured.
type remoteRun struct {
	inProcess, remote float64 // jobs a second
	// submit and submitOne are the rates of POST /api/v1/jobs/batch of
	// 1000 jobs from submitCallers callers at once, and from one.
	submit, submitOne float64
	// startP50 and startP99 are the claim→start latencies: from the
	// server's claim (the job's started_at) to its handler's start.
	startP50, startP99 time.Duration
}

// remoteBench measures the remote mode; see ModeRemote.
func remoteBench(ctx context.Context, cfg Config, w io.Writer) ([]Figure, error) {
	if cfg.Serve == nil {
		return nil, errors.New("the remote mode needs a server (Config.Serve)")
	}
	fmt.Fprintf(w, "remote: %d jobs a run, %d SDK workers × %d slots, in-process %d workers, %d run(s); load average %s\n",
		cfg.Jobs, cfg.RemoteWorkers, cfg.RemoteSlots, cfg.Concurrency, cfg.Runs, loadAverage())
	runs := make([]remoteRun, 0, cfg.Runs)
	for i := range cfg.Runs {
		r, err := remoteOnce(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Fprintf(w, "remote: run %d: in-process %.0f jobs/s, remote %.0f jobs/s, batch submit %.0f jobs/s (%d callers; one: %.0f), claim→start p50 %s p99 %s; load average %s\n",
			i+1, r.inProcess, r.remote, r.submit, submitCallers, r.submitOne, r.startP50, r.startP99, loadAverage())
		runs = append(runs, r)
	}
	var figs []Figure
	spread := func(name, unit string, of func(remoteRun) float64) {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = of(r)
		}
		slices.Sort(vs)
		figs = append(figs,
			report(w, Figure{"remote." + name + ".min", vs[0], unit}),
			report(w, Figure{"remote." + name + ".median", vs[len(vs)/2], unit}),
			report(w, Figure{"remote." + name + ".max", vs[len(vs)-1], unit}))
	}
	spread("inprocess.jobs_per_s", "jobs/s", func(r remoteRun) float64 { return r.inProcess })
	spread("sdk.jobs_per_s", "jobs/s", func(r remoteRun) float64 { return r.remote })
	spread("batch_submit.jobs_per_s", "jobs/s", func(r remoteRun) float64 { return r.submit })
	spread("batch_submit_one_caller.jobs_per_s", "jobs/s", func(r remoteRun) float64 { return r.submitOne })
	spread("claim_to_start.p50_ms", "ms", func(r remoteRun) float64 { return ms(r.startP50) })
	spread("claim_to_start.p99_ms", "ms", func(r remoteRun) float64 { return ms(r.startP99) })
	return figs, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// remoteOnce is one run: the backlog worked in-process, then the same
// backlog worked by the SDK workers, then the batch submissions.
func remoteOnce(ctx context.Context, cfg Config) (remoteRun, error) {
	var r remoteRun
	if err := purge(ctx, cfg.Store); err != nil {
		return r, err
	}
	_, rate, err := workBacklog(ctx, cfg, io.Discard, backlogRun{name: "remote.inprocess"})
	if err != nil {
		return r, err
	}
	r.inProcess = rate
	if err := purge(ctx, cfg.Store); err != nil {
		return r, err
	}
	secret, err := randomSecret()
	if err != nil {
		return r, err
	}
	url, stop, err := cfg.Serve(ctx, cfg.Store, secret)
	if err != nil {
		return r, fmt.Errorf("start the server: %w", err)
	}
	defer stop()
	admin, err := client.New(url, secret)
	if err != nil {
		return r, err
	}
	if r.remote, r.startP50, r.startP99, err = workRemote(ctx, cfg, admin, url); err != nil {
		return r, err
	}
	if err := purge(ctx, cfg.Store); err != nil {
		return r, err
	}
	if r.submitOne, err = submitBatches(ctx, admin, cfg.Jobs, 1); err != nil {
		return r, err
	}
	if err := purge(ctx, cfg.Store); err != nil {
		return r, err
	}
	if r.submit, err = submitBatches(ctx, admin, cfg.Jobs, submitCallers); err != nil {
		return r, err
	}
	return r, purge(ctx, cfg.Store)
}

// randomSecret is an admin secret for one run's server.
func randomSecret() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// workRemote inserts the backlog, then works it with the SDK workers,
// each holding a worker key of its own, and returns the rate and the
// claim→start latencies.
func workRemote(ctx context.Context, cfg Config, admin *client.Client, url string) (float64, time.Duration, time.Duration, error) {
	if _, err := insertBacklog(ctx, cfg.Store, cfg.Jobs, 0); err != nil {
		return 0, 0, 0, err
	}
	var (
		done   atomic.Int64
		mu     sync.Mutex
		starts = make([]time.Duration, 0, cfg.Jobs)
	)
	wctx, stopWorkers := context.WithCancel(ctx)
	errs := make(chan error, cfg.RemoteWorkers)
	var wg sync.WaitGroup
	defer func() { stopWorkers(); wg.Wait() }()
	begin := time.Now()
	for i := range cfg.RemoteWorkers {
		reg, err := admin.CreateWorker(ctx, api.WorkerRequest{Name: fmt.Sprintf("bench-%d", i)})
		if err != nil {
			return 0, 0, 0, fmt.Errorf("register a worker: %w", err)
		}
		c, err := client.New(url, reg.APIKey)
		if err != nil {
			return 0, 0, 0, err
		}
		wk := client.NewWorker(c, client.WorkerConfig{Queues: []string{Queue}, Concurrency: cfg.RemoteSlots,
			ClaimWait: time.Second, Logger: cfg.Logger})
		wk.HandleAny(func(_ context.Context, t *client.Task[json.RawMessage]) (json.RawMessage, error) {
			if t.Job.StartedAt != nil {
				d := time.Since(*t.Job.StartedAt)
				mu.Lock()
				starts = append(starts, d)
				mu.Unlock()
			}
			done.Add(1)
			return nil, nil
		})
		wg.Go(func() {
			if err := wk.Run(wctx); err != nil {
				errs <- err
			}
		})
	}
	if err := waitRemote(ctx, cfg.Store, &done, int64(cfg.Jobs), errs); err != nil {
		return 0, 0, 0, err
	}
	took := time.Since(begin)
	mu.Lock()
	sortDurations(starts)
	p50, p99 := percentile(starts, 0.5), percentile(starts, 0.99)
	mu.Unlock()
	return float64(cfg.Jobs) / took.Seconds(), p50, p99, nil
}

// waitRemote waits until the workers ran n jobs and none of the bench
// queue's jobs are queued or running (their outcomes written), or a
// worker failed.
func waitRemote(ctx context.Context, s store.JobStore, done *atomic.Int64, n int64, errs <-chan error) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if done.Load() >= n {
			left, err := s.JobList(ctx, store.ListParams{Queue: Queue, States: []job.State{job.StateQueued, job.StateRunning}, Limit: 0})
			if err != nil {
				return err
			}
			if left.Total == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			return fmt.Errorf("a worker stopped: %w", err)
		case <-tick.C:
		}
	}
}

// submitBatches sends cfg.Jobs no-op jobs in batches of up to
// api.MaxBatchJobs, from callers callers at once, and returns the jobs
// inserted a second.
func submitBatches(ctx context.Context, admin *client.Client, jobs, callers int) (float64, error) {
	size := min(jobs, api.MaxBatchJobs)
	reqs := make([]api.SubmitRequest, size)
	for i := range reqs {
		reqs[i] = api.SubmitRequest{Queue: Queue, Kind: kind, Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	batches := max(1, jobs/size)
	var next atomic.Int64
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(batches) {
				items, err := admin.SubmitBatch(ctx, reqs)
				if err == nil && (len(items) != len(reqs) || items[0].Status != 201) {
					err = fmt.Errorf("a batch of %d answered %d jobs", len(reqs), len(items))
				}
				if err != nil {
					errs <- fmt.Errorf("submit a batch: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(batches*size) / took.Seconds(), nil
}
