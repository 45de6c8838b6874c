package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// execution is one run of a job's handler as its worker recorded it:
// the job, the attempt and lease it ran under, and when it started and
// ended by the machine's wall clock (CLOCK_REALTIME, which the exec'd
// script reads as $EPOCHREALTIME and the Go workers as time.Now: one
// clock for every process of the run), in microseconds, the precision
// of the journal. A run without an end was cut short (its lease lost,
// its worker killed).
type execution struct {
	who     string // the worker instance
	job     uuid.UUID
	attempt int
	token   uuid.UUID // uuid.Nil for an exec worker's: see the claims
	start   int64
	end     int64 // 0: no end recorded
}

// jobScript is the command of the exec workers, run by bash (for
// $EPOCHREALTIME: no process is forked to read the clock). It appends
// a start line and an end line to its worker's record, $CHAOS_RECORD,
// and behaves as its args' mode says (see jobSpec).
const jobScript = `args=$(cat)
echo "S $JOBD_JOB_ID $JOBD_ATTEMPT ${EPOCHREALTIME/./}" >> "$CHAOS_RECORD"
args=${args// /}
mode=${args#*\"mode\":\"}; mode=${mode%%\"*}
ms=${args#*\"ms\":}; ms=${ms%%[,\}]*}
if [ "$ms" -gt 0 ]; then sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"; fi
echo "E $JOBD_JOB_ID $JOBD_ATTEMPT ${EPOCHREALTIME/./}" >> "$CHAOS_RECORD"
case $mode in
flaky) if [ "$JOBD_ATTEMPT" = 1 ]; then echo "flaky: the first attempt fails" >&2; exit 3; fi ;;
exhaust) echo "exhaust: every attempt fails" >&2; exit 4 ;;
doomed) echo "doomed: stdout that is not JSON fails the job for good"; exit 0 ;;
esac
printf '{"by":"exec","attempt":%s}\n' "$JOBD_ATTEMPT"
`

// execWorker is one slot of `jobd worker --exec` processes: one
// registered worker (one key), run by a process that the faults kill,
// hang or stop, and that is then started again as a new instance, with
// a record of its own.
type execWorker struct {
	h        *harness
	slot     int
	workerID string
	key      string

	mu       sync.Mutex
	instance int
	proc     *process
	record   string // the current instance's
	log      string
	records  []string // every instance's, for the checks
	names    []string // every instance's name, in step with records
	crashes  []string
}

// name is the current instance's name: the worker's name in the front's
// log and its record's.
func (w *execWorker) name() string {
	return fmt.Sprintf("exec-%d.%d", w.slot, w.instance)
}

// start starts a new instance of the worker.
func (w *execWorker) start() error {
	w.mu.Lock()
	w.instance++
	name := w.name()
	w.record = filepath.Join(w.h.dir, name+".record")
	w.records = append(w.records, w.record)
	w.names = append(w.names, name)
	record := w.record
	w.mu.Unlock()
	args := []string{"worker",
		"--server", w.h.proxyURL + "/w/" + name,
		"--key", w.key,
		"--queue", queueRemoteB + "," + queueRemoteA,
		"--concurrency", "3",
		"--exec", "bash " + w.h.script,
		"--claim-wait", "2s",
		"--heartbeat-interval", "1s",
		"--shutdown-timeout", "3s",
	}
	p, err := startProcess(w.h.jobd, args, w.log, "CHAOS_RECORD="+record, "LC_ALL=C")
	if err != nil {
		return err
	}
	w.h.procs.add(p)
	w.mu.Lock()
	w.proc = p
	w.mu.Unlock()
	go w.watch(p, name)
	return nil
}

// watch records an instance that exited by itself: a worker refused by
// the server (401, 403) or a crash.
func (w *execWorker) watch(p *process, name string) {
	<-p.done
	if p.signalled.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.crashes = append(w.crashes, fmt.Sprintf("%s exited by itself (%v); the log ends:\n%s", name, p.err, tail(w.log, 20)))
}

func (w *execWorker) current() *process {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.proc
}

// executions reads every instance's record: one execution per start
// line, with its end when the script wrote one.
func (w *execWorker) executions() ([]execution, error) {
	w.mu.Lock()
	records, names := append([]string(nil), w.records...), append([]string(nil), w.names...)
	w.mu.Unlock()
	var out []execution
	for i, path := range records {
		runs, err := readRecord(path, names[i])
		if err != nil {
			return nil, err
		}
		out = append(out, runs...)
	}
	return out, nil
}

// readRecord parses an exec worker's record. An instance runs a job's
// attempt at most once (a job comes back to the same attempt only when
// it is released, and an instance releases only as it exits), so a
// start and an end line pair by job and attempt.
func readRecord(path, who string) ([]execution, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // it never ran a job
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	type key struct {
		job     uuid.UUID
		attempt int
	}
	index := make(map[key]int)
	var out []execution
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 {
			return nil, fmt.Errorf("%s: malformed line %q", path, sc.Text())
		}
		id, err1 := uuid.Parse(fields[1])
		attempt, err2 := strconv.Atoi(fields[2])
		at, err3 := strconv.ParseInt(fields[3], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%s: line %q: %w", path, sc.Text(), err)
		}
		k := key{id, attempt}
		switch fields[0] {
		case "S":
			if _, dup := index[k]; dup {
				return nil, fmt.Errorf("%s: job %s attempt %d started twice in one instance", path, id, attempt)
			}
			index[k] = len(out)
			out = append(out, execution{who: who, job: id, attempt: attempt, start: at})
		case "E":
			i, ok := index[k]
			if !ok {
				return nil, fmt.Errorf("%s: job %s attempt %d ended without a start", path, id, attempt)
			}
			out[i].end = at
		default:
			return nil, fmt.Errorf("%s: malformed line %q", path, sc.Text())
		}
	}
	return out, sc.Err()
}

// runLog is the Go workers' record of their executions, in memory.
type runLog struct {
	mu   sync.Mutex
	runs []execution
}

func (l *runLog) start(who string, j api.ClaimedJob) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, execution{who: who, job: j.ID, attempt: j.Attempt, token: j.LeaseToken, start: time.Now().UnixMicro()})
	return len(l.runs) - 1
}

func (l *runLog) end(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[i].end = time.Now().UnixMicro()
}

func (l *runLog) all() []execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]execution(nil), l.runs...)
}

// goWorker is a remote worker inside the test process (client.NewWorker),
// talking to the nodes through the front, which the partition fault
// cuts it off from.
type goWorker struct {
	who      string
	workerID string
	w        *client.Worker
	stop     context.CancelFunc
	done     chan error
}

// newGoWorker starts a Go SDK worker over queues.
func newGoWorker(h *harness, who, workerID, key string, queues []string) (*goWorker, error) {
	c, err := client.New("http://jobd.chaos", key, client.WithHTTPClient(h.front.client(who)))
	if err != nil {
		return nil, err
	}
	w := client.NewWorker(c, client.WorkerConfig{
		Queues: queues, Concurrency: 4,
		ClaimWait: 2 * time.Second, HeartbeatInterval: time.Second, ShutdownTimeout: 3 * time.Second,
		Logger: h.workerLogger(who),
	})
	w.HandleAny(func(ctx context.Context, t *client.Task[json.RawMessage]) (json.RawMessage, error) {
		return runJob(ctx, &h.runs, who, t)
	})
	ctx, cancel := context.WithCancel(context.Background())
	g := &goWorker{who: who, workerID: workerID, w: w, stop: cancel, done: make(chan error, 1)}
	go func() { g.done <- w.Run(ctx) }()
	return g, nil
}

// runJob is the Go workers' handler: what the exec workers' script does.
func runJob(ctx context.Context, runs *runLog, who string, t *client.Task[json.RawMessage]) (json.RawMessage, error) {
	var a jobArgs
	if err := json.Unmarshal(t.Job.Args, &a); err != nil {
		return nil, client.Permanent(fmt.Errorf("args: %w", err))
	}
	i := runs.start(who, t.Job)
	if a.MS > 0 {
		timer := time.NewTimer(time.Duration(a.MS) * time.Millisecond)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, context.Cause(ctx) // cut short: no end recorded
		}
	}
	runs.end(i)
	switch a.Mode {
	case modeFlaky:
		if t.Job.Attempt == 1 {
			return nil, errors.New("flaky: the first attempt fails")
		}
	case modeExhaust:
		return nil, errors.New("exhaust: every attempt fails")
	case modeDoomed:
		return nil, client.Permanent(errors.New("doomed: fails for good"))
	}
	return json.RawMessage(`{"by":"go"}`), nil
}
