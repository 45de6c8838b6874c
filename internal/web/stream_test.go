package web_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/store"
)

// TestStreamFollowsSession: the dashboard's stream of a job counts
// against its key's streams, beside the API's, and ends once the key of
// its session is revoked.
func TestStreamFollowsSession(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret, MaxStreamsPerCaller: 1, StreamRecheck: 10 * time.Millisecond, StreamMaxAge: time.Hour})
		j := d.submit(api.SubmitRequest{Kind: "k", Queue: "idle"})
		k := d.key("viewer", api.ScopeRead)
		b := d.browser()
		b.login(k.Key)

		req, _ := http.NewRequestWithContext(t.Context(), "GET", d.URL+"/ui/jobs/"+j.ID.String()+"/stream", nil)
		resp, err := b.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if line, _ := br.ReadString('\n'); resp.StatusCode != 200 || line != "event: job\n" {
			t.Fatalf("the dashboard's stream: %d %q", resp.StatusCode, line)
		}

		// The key's second stream, through the API: past its cap.
		api2, _ := http.NewRequestWithContext(t.Context(), "GET", d.URL+"/api/v1/jobs/"+j.ID.String()+"/stream", nil)
		api2.Header.Set("Authorization", "Bearer "+k.Key)
		r2, err := http.DefaultClient.Do(api2)
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if r2.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("the key's API stream beside its dashboard stream: %d, want 429", r2.StatusCode)
		}

		if err := d.api.RevokeKey(context.Background(), k.ID); err != nil {
			t.Fatal(err)
		}
		var last string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			if strings.HasPrefix(line, "data: ") {
				last = line
			}
		}
		if !strings.Contains(last, api.ProblemUnauthorized) {
			t.Fatalf("the revoked session's stream ended after %q, want an unauthorized error", last)
		}
	})
}
