package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/builtin"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// sseStream reads the events of a job stream.
type sseStream struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
}

func openStream(t *testing.T, s *testServer, id string) *sseStream {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", s.URL+"/api/v1/jobs/"+id+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &sseStream{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next returns the next job event, or ok false when the stream ended.
func (s *sseStream) next() (j api.Job, ok bool) {
	s.t.Helper()
	var event, id, data string
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			return j, false
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && data != "":
			if event != "job" || id == "" {
				s.t.Fatalf("event %q id %q data %s", event, id, data)
			}
			if err := json.Unmarshal([]byte(data), &j); err != nil {
				s.t.Fatal(err)
			}
			return j, true
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// TestStreamProgress drives a job through the store and sees each change
// on the stream, then the final event and the end of the stream.
func TestStreamProgress(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		q := s.submit(t, `{"kind":"k"}`, 201)
		sse := openStream(t, s, q.ID.String())

		j, _ := sse.next()
		if j.ID != q.ID || j.State != api.StateQueued {
			t.Fatalf("first event %+v", j)
		}
		run := claim(t, st, "default")
		if j, _ = sse.next(); j.State != api.StateRunning {
			t.Fatalf("event after claim: %s", j.State)
		}
		for done := int64(1); done <= 3; done++ {
			setProgress(t, st, run, job.Progress{Phase: "decoding", Done: done, Total: 3, Items: json.RawMessage(`{"a":"ok"}`)})
			j, _ = sse.next()
			if j.Progress.Phase != "decoding" || j.Progress.Done != done || j.Progress.Total != 3 || string(j.Progress.Items) != `{"a":"ok"}` {
				t.Fatalf("progress event %+v, want done %d", j.Progress, done)
			}
		}
		finish(t, st, run, store.OutcomeSucceeded, `{"n":3}`, "")
		if j, _ = sse.next(); j.State != api.StateSucceeded || string(j.Result) != `{"n":3}` {
			t.Fatalf("final event %+v", j)
		}
		if _, ok := sse.next(); ok {
			t.Fatal("the stream went on after the final state")
		}

		// A final job: one event, then the end.
		sse = openStream(t, s, q.ID.String())
		if j, ok := sse.next(); !ok || j.State != api.StateSucceeded {
			t.Fatalf("stream of a final job: %+v", j)
		}
		if _, ok := sse.next(); ok {
			t.Fatal("the stream of a final job went on")
		}
	})
}

// TestStreamSleepJob follows a built-in sleep job run by the engine: the
// stream delivers its progress and ends with it succeeded.
func TestStreamSleepJob(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		eng, err := engine.New(engine.Config{
			Store: st, Queues: []engine.QueueConfig{{Queue: "default", Concurrency: 1}}, Logger: slog.New(slog.DiscardHandler),
			ProgressInterval: 1, // every step is written
		})
		if err != nil {
			t.Fatal(err)
		}
		builtin.Register(eng)
		// Paused until the stream is open, so that it sees the job run.
		s.do("POST", "/api/v1/queues/default/pause", "").must(t, 200, nil)
		q := s.submit(t, `{"kind":"sleep","args":{"ms":1500,"steps":3,"result":{"slept":true}}}`, 201)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- eng.Run(ctx) }()
		defer func() {
			stop()
			if err := <-done; err != nil && err != context.Canceled {
				t.Errorf("engine: %v", err)
			}
		}()

		sse := openStream(t, s, q.ID.String())
		s.do("POST", "/api/v1/queues/default/resume", "").must(t, 200, nil)
		var events []api.Job
		for {
			j, ok := sse.next()
			if !ok {
				break
			}
			events = append(events, j)
		}
		if len(events) < 3 {
			t.Fatalf("%d events, want queued, progress..., succeeded: %+v", len(events), events)
		}
		sawProgress := false
		for _, j := range events {
			if j.State == api.StateRunning && j.Progress.Phase == "sleeping" && j.Progress.Total == 3 {
				sawProgress = true
			}
		}
		last := events[len(events)-1]
		if last.State != api.StateSucceeded || string(last.Result) != `{"slept":true}` ||
			last.Progress.Done != 3 || last.Progress.Total != 3 {
			t.Errorf("last event %+v", last)
		}
		if !sawProgress {
			t.Errorf("no running event with progress among %d events", len(events))
		}
	})
}
