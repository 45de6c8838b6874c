package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// lostAnswer serves every request, but closes the connection instead of
// answering the first request of path (which the server applied); it
// keeps the answers to path it lets through.
type lostAnswer struct {
	path    string
	mu      sync.Mutex
	dropped bool
	answers []string
}

func (l *lostAnswer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != l.path {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		l.mu.Lock()
		drop := !l.dropped
		l.dropped = true
		if !drop {
			l.answers = append(l.answers, rec.Body.String())
		}
		l.mu.Unlock()
		if drop {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// TestWorkerResendsLostOutcome: jobd worker's outcome reaches the server,
// but its answer is lost (the connection closes): the worker sends it
// again, the server answers it as a repeat, and the job succeeded once,
// its command run once.
func TestWorkerResendsLostOutcome(t *testing.T) {
	lost := func() proxy { return &lostAnswer{path: "/api/v1/worker/outcomes"} }
	eachProxiedWorkerServer(t, lost, func(t *testing.T, s *workerServer, p proxy) {
		l := p.(*lostAnswer)
		counter := filepath.Join(t.TempDir(), "runs")
		j := s.submit(t, api.SubmitRequest{Queue: "lost", Kind: "k"})
		stop := execWorker(t, s, "lost", `echo run >> `+counter+`; echo '"done"'`)
		got := s.waitFor(t, j.ID, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		s.waitFor(t, j.ID, "its outcome answered again", func(*job.Job) bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return len(l.answers) > 0
		})
		code, stderr := stop()
		l.mu.Lock()
		answers := l.answers
		l.mu.Unlock()
		if code != 0 || !strings.Contains(answers[0], `"repeat":true`) {
			t.Fatalf("exit %d, answers %q (want the resend's repeat); stderr:\n%s", code, answers, stderr)
		}
		if got.Attempt != 1 || string(got.Result) != `"done"` {
			t.Fatalf("job %+v, want done at its first attempt", got)
		}
		runs, err := os.ReadFile(counter)
		if err != nil || strings.Count(string(runs), "run") != 1 {
			t.Fatalf("the command ran %q (%v), want once", runs, err)
		}
	})
}
