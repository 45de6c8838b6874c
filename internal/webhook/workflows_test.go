package webhook_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// finishedWorkflow is one WorkflowFinished a recorder saw.
type finishedWorkflow struct {
	name, state string
	took        time.Duration
}

// workflowRecorder records the workflows' ends the service reports.
type workflowRecorder struct {
	observe.Nop
	ended chan finishedWorkflow
}

func (r *workflowRecorder) WorkflowFinished(name, state string, took time.Duration) {
	r.ended <- finishedWorkflow{name, state, took}
}

// TestWorkflowFinished: a workflow's end is delivered, signed, to the
// subscriptions of workflow.finished (whatever their queue filter: a
// workflow has none) with its id, name, state and end, not to the
// others; and it is recorded once, with its duration from the
// submission.
func TestWorkflowFinished(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, db database) {
		rcv, other := newReceiver(t), newReceiver(t)
		rec := &workflowRecorder{ended: make(chan finishedWorkflow, 10)}
		n := startNode(t, db, options{workflows: rec})
		_, secret := n.subscribe(t, rcv.URL, []string{api.EventWorkflowFinished}, api.WebhookFilter{Queue: "elsewhere"})
		n.subscribe(t, other.URL, []string{api.EventJobRescued}, api.WebhookFilter{})

		res, err := n.st.WorkflowSubmit(t.Context(), store.WorkflowSubmitParams{WorkflowParams: job.WorkflowParams{Name: "wf", Tasks: []job.TaskParams{
			{Ref: "a", InsertParams: job.InsertParams{Queue: "work", Kind: "ok"}},
			{Ref: "b", DependsOn: []string{"a"}, InsertParams: job.InsertParams{Queue: "work", Kind: "fail"}},
			{Ref: "c", DependsOn: []string{"b"}, InsertParams: job.InsertParams{Queue: "work", Kind: "ok"}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		var others []request
		got := rcv.nextOf(t, api.EventWorkflowFinished, &others)
		verify(t, secret, got)
		var data api.WorkflowFinishedData
		if err := json.Unmarshal(got.Payload.Data, &data); err != nil {
			t.Fatal(err)
		}
		w := data.Workflow
		if w.ID != res.Workflow.ID || w.Name != "wf" || w.State != api.WorkflowFailed || w.FinishedAt.IsZero() {
			t.Fatalf("workflow.finished data %s", got.Payload.Data)
		}
		select {
		case e := <-rec.ended:
			if e.name != "wf" || e.state != "failed" || e.took < 0 {
				t.Fatalf("recorded %+v", e)
			}
		case <-time.After(testsignal.Timeout):
			t.Fatal("the workflow's end was not recorded")
		}
		select {
		case e := <-rec.ended:
			t.Fatalf("recorded twice: %+v", e)
		case got := <-other.got:
			t.Fatalf("a job.rescued subscription got %s", got.Body)
		default:
		}
	})
}
