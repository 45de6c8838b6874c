package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.DiscardHandler)

// database is a fresh database of a driver, which may be opened, closed
// and opened again (a restart).
type database struct{ driver, dsn string }

func (d database) open(t *testing.T) *storewatch.Store {
	t.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		err error
	)
	switch d.driver {
	case "sqlite":
		st, err = sqlite.Open(ctx, d.dsn, sqlite.Options{})
	case "postgres":
		st, err = postgres.Open(ctx, d.dsn, postgres.Options{Logger: quiet})
	}
	if err != nil {
		t.Fatalf("open %s: %v", d.driver, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", d.driver, err)
	}
	return storewatch.Wrap(st)
}

// eachStore runs fn as a parallel subtest per driver, on a fresh database.
func eachStore(t *testing.T, fn func(t *testing.T, db database)) {
	t.Helper()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			db := database{driver: driver}
			if driver == "sqlite" {
				db.dsn = filepath.Join(t.TempDir(), "jobd.db")
			} else {
				db.dsn = migrated.NewDatabase(t)
			}
			fn(t, db)
		})
	}
}

// callbackSecret is the nodes' callback secret.
const callbackSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// options of a node under test; zero values take the test defaults.
type options struct {
	guard         webhook.Guard
	clock         clock.Clock // the service's
	alertInterval time.Duration
	failureCount  int
	backlogAge    time.Duration
	maxAttempts   int
	workflows     observe.Workflows // the service's recorder of workflows' ends
}

// node is a jobd node under test: a store, an engine with a pool for the
// deliveries and one for the test's jobs (queue "work": kind "ok"
// succeeds, kind "fail" fails for good), and the webhook service.
type node struct {
	st      *storewatch.Store
	eng     *engine.Engine
	svc     *webhook.Service
	stopped chan struct{}
	cancel  context.CancelFunc
}

func startNode(t *testing.T, db database, o options) *node {
	t.Helper()
	st := db.open(t)
	fast := engine.Backoff{Kind: engine.BackoffExponential, Base: time.Millisecond, Max: 5 * time.Millisecond}
	eng, err := engine.New(engine.Config{
		Store: st, Logger: quiet, PollInterval: 20 * time.Millisecond, ReaperInterval: 50 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond,
		Queues: []engine.QueueConfig{
			{Queue: webhook.Queue, Concurrency: 4, Backoff: fast},
			{Queue: "work", Concurrency: 4, Backoff: fast},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	engine.Register(eng, "ok", func(ctx context.Context, j *engine.Job[json.RawMessage]) (string, error) { return "done", nil })
	engine.Register(eng, "block", func(ctx context.Context, j *engine.Job[json.RawMessage]) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	engine.Register(eng, "fail", func(ctx context.Context, j *engine.Job[json.RawMessage]) (string, error) {
		return "", engine.Permanent(errors.New("boom"))
	})
	svc, err := webhook.New(webhook.Config{
		Store: st, Engine: eng, CallbackSecret: callbackSecret, Guard: o.guard, Logger: quiet, Clock: o.clock,
		AlertInterval: o.alertInterval, FailureCount: o.failureCount, BacklogAge: o.backlogAge,
		MaxAttempts: o.maxAttempts, Workflows: o.workflows,
		DispatchInterval: 10 * time.Millisecond, BacklogInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	testsignal.Of(&svc.Points().Dispatched).Init()
	testsignal.Of(&svc.Points().Delivered).Init()
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{st: st, eng: eng, svc: svc, stopped: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(n.stopped)
		_ = eng.Run(ctx)
	}()
	t.Cleanup(n.stop)
	return n
}

// stop stops the node's engine and waits for it.
func (n *node) stop() {
	n.cancel()
	<-n.stopped
}

// submit inserts a job of kind in queue "work".
func (n *node) submit(t *testing.T, p job.InsertParams) *job.Job {
	t.Helper()
	if p.Queue == "" {
		p.Queue = "work"
	}
	res, err := n.st.JobInsertMany(t.Context(), []job.InsertParams{p})
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	return res[0].Job
}

// subscribe creates a subscription to events at url, with a secret of
// its own, and returns it and the secret.
func (n *node) subscribe(t *testing.T, url string, events []string, filter api.WebhookFilter) (*store.Webhook, string) {
	t.Helper()
	w, secret, err := n.svc.Create(t.Context(), api.WebhookRequest{URL: url, Events: events, Filter: filter})
	if err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	return w, secret
}

// untilJob waits for the job id to satisfy cond.
func (n *node) untilJob(t *testing.T, id uuid.UUID, what string, cond func(*job.Job) bool) *job.Job {
	t.Helper()
	var j *job.Job
	n.st.Until(t, what, func() bool {
		var err error
		j, err = n.st.JobGet(context.Background(), id)
		return err == nil && cond(j)
	})
	return j
}

// deliveries lists the delivery jobs, oldest first.
func (n *node) deliveries(t *testing.T) []*job.Job {
	t.Helper()
	res, err := n.st.JobList(t.Context(), store.ListParams{Queue: webhook.Queue, OldestFirst: true, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return res.Jobs
}

// request is one delivery a receiver got.
type request struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Payload                  api.WebhookPayload
	Status                   int // what the receiver answered
}

// receiver is an HTTP server that records the deliveries it gets and
// answers each with the status answer returns (200 when nil).
type receiver struct {
	*httptest.Server
	got chan request

	mu     sync.Mutex
	answer func(n int) int // n: 1 for the first request
	n      int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{got: make(chan request, 1000)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.n++
		status := http.StatusOK
		if r.answer != nil {
			status = r.answer(r.n)
		}
		r.mu.Unlock()
		got := request{ID: req.Header.Get("webhook-id"), Timestamp: req.Header.Get("webhook-timestamp"),
			Signature: req.Header.Get("webhook-signature"), Body: body, Status: status}
		_ = json.Unmarshal(body, &got.Payload)
		w.WriteHeader(status)
		select {
		case r.got <- got:
		default: // a test that does not read them all: drop the rest
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// answering sets how the receiver answers from now on.
func (r *receiver) answering(f func(n int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answer = f
}

// next waits for the next delivery.
func (r *receiver) next(t *testing.T, what string) request {
	t.Helper()
	select {
	case got := <-r.got:
		return got
	case <-time.After(testsignal.Timeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// nextOf waits for the next delivery of type event, keeping the others
// for later calls.
func (r *receiver) nextOf(t *testing.T, event string, others *[]request) request {
	t.Helper()
	for i, got := range *others {
		if got.Payload.Type == event {
			*others = append((*others)[:i], (*others)[i+1:]...)
			return got
		}
	}
	for {
		got := r.next(t, "a delivery of "+event)
		if got.Payload.Type == event {
			return got
		}
		*others = append(*others, got)
	}
}

// verify checks a delivery's signature as the Standard Webhooks
// specification describes it, independently of package webhook: the
// secret is "whsec_" and the base64 of the key; the signed content is
// the webhook-id, the webhook-timestamp and the body joined by "."; the
// signature header holds space-separated "v1,<base64 HMAC-SHA256>"
// entries, one of which must match.
func verify(t *testing.T, secret string, got request) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret %q is not whsec_ and base64: %v", secret, err)
	}
	if got.ID == "" || got.Timestamp == "" {
		t.Fatalf("delivery without webhook-id (%q) or webhook-timestamp (%q)", got.ID, got.Timestamp)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(got.ID + "." + got.Timestamp + "." + string(got.Body)))
	want := mac.Sum(nil)
	for _, entry := range strings.Fields(got.Signature) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(sig); err == nil && hmac.Equal(b, want) {
			return
		}
	}
	t.Fatalf("webhook-signature %q does not verify for id %s, timestamp %s", got.Signature, got.ID, got.Timestamp)
}

// alertData decodes an alert's data.
func alertData(t *testing.T, got request) api.AlertData {
	t.Helper()
	var d api.AlertData
	if err := json.Unmarshal(got.Payload.Data, &d); err != nil {
		t.Fatalf("alert data %s: %v", got.Payload.Data, err)
	}
	return d
}

func describe(got request) string {
	return fmt.Sprintf("%s %s %s", got.ID, got.Payload.Type, got.Payload.Data)
}
