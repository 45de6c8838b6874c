package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/internal/httpapi"
)

// BenchmarkWorkflowSubmit sends POST /api/v1/workflows of a fan-out of
// 1 000 tasks and its fan-in (1 002 tasks, fanBody) to a real server on
// a real store, then reads it back (GET /api/v1/workflows/{id}): the
// time of one submission, every task checked and inserted in one
// transaction, and of one read of its detail.
//
//	go test ./internal/httpapi -run x -bench WorkflowSubmit -benchtime 20x
func BenchmarkWorkflowSubmit(b *testing.B) {
	body := fanBody(1000)
	for _, driver := range []string{"postgres", "sqlite"} {
		b.Run(driver, func(b *testing.B) {
			st := openStore(b, driver)
			h, err := httpapi.New(httpapi.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			var submit, read time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				res, err := http.Post(srv.URL+"/api/v1/workflows", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				loc := res.Header.Get("Location")
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusCreated {
					b.Fatalf("status %d", res.StatusCode)
				}
				mid := time.Now()
				submit += mid.Sub(start)
				got, err := http.Get(srv.URL + loc)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, got.Body)
				got.Body.Close()
				read += time.Since(mid)
			}
			b.ReportMetric(float64(submit.Milliseconds())/float64(b.N), "submit-ms")
			b.ReportMetric(float64(read.Milliseconds())/float64(b.N), "get-ms")
		})
	}
}
