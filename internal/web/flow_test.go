package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestOverviewShowsFlowControl: the overview's queue row, and the summary
// it refreshes from, show the queue's limits and its throttle.
func TestOverviewShowsFlowControl(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{HealthInterval: 10 * time.Millisecond})
		ctx := context.Background()
		d.submit(api.SubmitRequest{Kind: "noop", Queue: "api"})
		d.submit(api.SubmitRequest{Kind: "noop", Queue: "plain"})
		if _, err := d.api.SetQueueLimits(ctx, "api", api.QueueLimits{GlobalLimit: 5,
			Rate: &api.QueueRate{Limit: 100, Period: api.Duration(time.Minute), By: "partition_key"}}); err != nil {
			t.Fatal(err)
		}
		js, err := st.JobClaim(ctx, store.ClaimParams{Queue: "api", Max: 1, Owner: "test"})
		if err != nil || len(js) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(js), err)
		}
		if _, err := st.JobFinish(ctx, []store.Outcome{{Lease: store.Lease{ID: js[0].ID, Token: js[0].LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "429", Throttle: time.Hour}}}); err != nil {
			t.Fatal(err)
		}
		d.waitSnapshot()

		b := d.browser()
		p := b.get("/ui/")
		if p.status != http.StatusOK {
			t.Fatalf("GET /ui/: %d", p.status)
		}
		i := strings.Index(p.body, `<tr data-queue="api"`)
		if i < 0 {
			t.Fatalf("no row for queue api\n%s", p.body)
		}
		row := p.body[i : i+strings.Index(p.body[i:], "</tr>")]
		if !strings.Contains(row, `data-field="limits">global 5 · 100 per 1 m by partition<`) ||
			!strings.Contains(row, `data-field="throttled">for 59 m`) && !strings.Contains(row, `data-field="throttled">for 1 h`) {
			t.Errorf("the api row shows no limits or throttle: %s", row)
		}
		sum := b.summary()
		for _, q := range sum["queues"].([]any) {
			q := q.(map[string]any)
			switch q["name"] {
			case "api":
				if q["limits"] != "global 5 · 100 per 1 m by partition" || !strings.HasPrefix(q["throttled"].(string), "for ") {
					t.Errorf("summary of api: %v", q)
				}
			case "plain":
				if q["limits"] != "" || q["throttled"] != "" {
					t.Errorf("summary of plain: %v", q)
				}
			}
		}
	})
}
