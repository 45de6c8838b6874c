package telemetry_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/internal/telemetry"
)

// TestWorkflowMetrics: the workflow series by name (started, finished by
// state, the duration histogram), names beyond MaxWorkflowSeries counted
// as "other", and a finish of unknown duration counted without an
// observation.
func TestWorkflowMetrics(t *testing.T) {
	m := telemetry.NewMetrics(telemetry.Config{Version: "test"})
	m.WorkflowStarted("transcode")
	m.WorkflowStarted("transcode")
	m.WorkflowFinished("transcode", "succeeded", 90*time.Second)
	m.WorkflowFinished("transcode", "failed", -1)
	for i := range telemetry.MaxWorkflowSeries + 5 {
		m.WorkflowStarted(fmt.Sprintf("w%d", i))
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	text := string(body)
	for _, want := range []string{
		`jobd_workflows_started_total{name="transcode"} 2`,
		`jobd_workflows_finished_total{name="transcode",state="succeeded"} 1`,
		`jobd_workflows_finished_total{name="transcode",state="failed"} 1`,
		`jobd_workflow_duration_seconds_count{name="transcode"} 1`,
		`jobd_workflow_duration_seconds_sum{name="transcode"} 90`,
		`jobd_workflows_started_total{name="other"} 6`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in the scrape", want)
		}
	}
	if n := strings.Count(text, "jobd_workflows_started_total{"); n != telemetry.MaxWorkflowSeries+1 {
		t.Errorf("%d started series, want %d and other", n, telemetry.MaxWorkflowSeries)
	}
}
