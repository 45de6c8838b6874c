package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobd/jobd/observe"
)

// MaxWorkflowSeries caps the workflow names the workflow metrics keep
// series for: names come from submitters, and a label must stay bounded.
// Names beyond it are counted under the name "other".
const MaxWorkflowSeries = 500

// workflowBuckets suit a workflow's run: 10 ms to a day.
var workflowBuckets = []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600}

var _ observe.Workflows = (*Metrics)(nil)

// workflowMetrics are the series of workflows, by name.
type workflowMetrics struct {
	started  *prometheus.CounterVec
	finished *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	names    map[string]bool
}

func newWorkflowMetrics(f func(prometheus.Collector)) *workflowMetrics {
	w := &workflowMetrics{names: make(map[string]bool)}
	w.started = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_workflows_started_total",
		Help: "Workflows this node's API created, by name."}, []string{"name"})
	w.finished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_workflows_finished_total",
		Help: "Workflows that ended (their last task became final), counted once in the cluster by the node that dispatched the end's event, by name and state (succeeded, failed, canceled)."},
		[]string{"name", "state"})
	w.seconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "jobd_workflow_duration_seconds",
		Help: "Time from a workflow's submission to its end, by name.", Buckets: workflowBuckets}, []string{"name"})
	f(w.started)
	f(w.finished)
	f(w.seconds)
	return w
}

// workflowName is the label of name: itself, or "other" beyond
// MaxWorkflowSeries names. The caller holds m.kmu.
func (m *Metrics) workflowName(name string) string {
	w := m.workflows
	if w.names[name] {
		return name
	}
	if len(w.names) >= MaxWorkflowSeries {
		return otherKind
	}
	w.names[name] = true
	return name
}

// WorkflowStarted records a created workflow.
func (m *Metrics) WorkflowStarted(name string) {
	m.kmu.Lock()
	name = m.workflowName(name)
	m.kmu.Unlock()
	m.workflows.started.WithLabelValues(name).Inc()
}

// WorkflowFinished records a workflow's end.
func (m *Metrics) WorkflowFinished(name, state string, took time.Duration) {
	m.kmu.Lock()
	name = m.workflowName(name)
	m.kmu.Unlock()
	m.workflows.finished.WithLabelValues(name, state).Inc()
	if took >= 0 {
		m.workflows.seconds.WithLabelValues(name).Observe(took.Seconds())
	}
}
