package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
)

// BenchmarkSubmit sends single-job POST /api/v1/jobs requests from
// parallel clients to a real server on a real store, authenticated by a
// submit-scope API key: the CPU and round trips of the HTTP submit path.
// -cpu sets the concurrency (GOMAXPROCS × RunParallel's goroutines).
//
//	go test ./httpapi -run x -bench Submit -benchtime 5000x
func BenchmarkSubmit(b *testing.B) {
	for _, driver := range []string{"postgres", "sqlite"} {
		b.Run(driver, func(b *testing.B) {
			st := openStore(b, driver)
			h, err := httpapi.New(httpapi.Config{Store: st, AdminSecret: "admin-secret",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			key := submitKey(b, srv.URL)
			body := []byte(`{"queue":"bench","kind":"k","args":{"n":1}}`)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/jobs", bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					res, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusCreated {
						b.Errorf("status %d", res.StatusCode)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

// submitKey creates an API key of scope submit through the API and
// returns its secret.
func submitKey(b *testing.B, url string) string {
	b.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/keys", strings.NewReader(`{"name":"bench","scopes":["submit"]}`))
	req.Header.Set("Authorization", "Bearer admin-secret")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var k api.Key
	if err := json.NewDecoder(res.Body).Decode(&k); err != nil || k.Key == "" {
		b.Fatalf("create key: status %d, %v", res.StatusCode, err)
	}
	return k.Key
}
