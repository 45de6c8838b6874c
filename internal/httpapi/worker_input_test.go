package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// remoteWorker is a worker registered over HTTP, holding its key.
type remoteWorker struct {
	s   *testServer
	key string
}

// registerWorker registers a remote worker through the API.
func (s *testServer) registerWorker(t *testing.T, name string) *remoteWorker {
	t.Helper()
	var created api.WorkerCreated
	s.do("POST", "/api/v1/workers", `{"name":"`+name+`"}`).must(t, 201, &created)
	return &remoteWorker{s: s, key: created.APIKey}
}

// do sends a request with the worker's key.
func (w *remoteWorker) do(method, path, body string) *response {
	w.s.t.Helper()
	return w.s.do(method, path, body, "Authorization: Bearer "+w.key)
}

// claim submits a job of queue and claims it, over HTTP.
func (w *remoteWorker) claim(t *testing.T, queue string) api.ClaimedJob {
	t.Helper()
	w.s.submit(t, `{"kind":"k","queue":"`+queue+`"}`, 201)
	var got api.ClaimResponse
	w.do("POST", "/api/v1/worker/claim", `{"queues":["`+queue+`"]}`).must(t, 200, &got)
	if len(got.Jobs) != 1 {
		t.Fatalf("claimed %d jobs of %q, want 1", len(got.Jobs), queue)
	}
	return got.Jobs[0]
}

// TestWorkerStringsStorable: every string a remote worker sends (error,
// phase, progress items' keys and values, checkpoint, result) is checked
// as job args are: NUL, a lone surrogate or invalid UTF-8 is answered 422
// naming the field, nothing is written, and the job keeps running under
// the same lease, which a correct follow-up call still uses.
func TestWorkerStringsStorable(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		cj := w.claim(t, "strings")
		id, token := cj.ID.String(), cj.LeaseToken.String()
		lease := `"lease_token":"` + token + `"`
		base := "/api/v1/worker/jobs/" + id

		for _, c := range []struct{ route, body, field string }{
			{"/fail", `{` + lease + `,"error":"bad \u0000 nul"}`, "error"},
			{"/fail", `{` + lease + `,"error":"lone \ud800 high","retryable":true}`, "error"},
			{"/fail", `{` + lease + `,"error":"lone \udc00 low"}`, "error"},
			{"/fail", "{" + lease + ",\"error\":\"raw \xff byte\"}", "error"},
			{"/progress", `{` + lease + `,"phase":"bad \u0000 nul","done":1,"total":2}`, "phase"},
			{"/progress", `{` + lease + `,"phase":"\ud83d","done":1,"total":2}`, "phase"},
			{"/progress", "{" + lease + ",\"phase\":\"\xc3\",\"done\":1,\"total\":2}", "phase"},
			{"/progress", `{` + lease + `,"done":1,"total":2,"items":{"a\u0000b":"ok"}}`, "items"},
			{"/progress", `{` + lease + `,"done":1,"total":2,"items":{"a":"\u0000"}}`, "items"},
			{"/progress", `{` + lease + `,"done":1,"total":2,"items":{"\udbff":1}}`, "items"},
			{"/progress", `{` + lease + `,"done":1,"total":2,"items":[{"f":"x\udfffy"}]}`, "items"},
			{"/checkpoint", `{` + lease + `,"checkpoint":{"frame":"\u0000"}}`, "checkpoint"},
			{"/checkpoint", `{` + lease + `,"checkpoint":{"\ud800\ud800":1}}`, "checkpoint"},
			{"/checkpoint", "{" + lease + ",\"checkpoint\":{\"k\":\"\xfe\"}}", "checkpoint"},
			{"/complete", `{` + lease + `,"result":{"out":"\u0000"}}`, "result"},
			{"/complete", `{` + lease + `,"result":"\udc00"}`, "result"},
			{"/complete", "{" + lease + ",\"result\":[\"\xff\"]}", "result"},
		} {
			r := w.do("POST", base+c.route, c.body)
			if r.status != 422 {
				t.Errorf("POST %s %q: status %d, want 422 (%s)", c.route, c.body, r.status, r.body)
				continue
			}
			r.problem(t, 422, c.field)
		}

		// Nothing was written: the job runs under the same lease, with no
		// progress, checkpoint, result or error, and its journal holds the
		// claim only.
		j, err := st.JobGet(context.Background(), cj.ID)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != job.StateRunning || j.LeaseToken != cj.LeaseToken || j.Attempt != 1 ||
			j.Progress.Phase != "" || j.Progress.Done != 0 || len(j.Progress.Items) != 0 ||
			len(j.Checkpoint) != 0 || len(j.Result) != 0 || j.LastError != "" {
			t.Fatalf("refused calls wrote to the job: %+v", j)
		}
		evs, err := st.JobEvents(context.Background(), cj.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2 || evs[1].Kind != job.EventClaimed {
			t.Fatalf("journal after refused calls: %+v", evs)
		}

		// The lease is still usable for correct calls.
		var pr api.ProgressResponse
		w.do("POST", base+"/progress", `{`+lease+`,"phase":"encode é","done":1,"total":2,"items":{"a.mp4":"done"}}`).must(t, 200, &pr)
		w.do("POST", base+"/checkpoint", `{`+lease+`,"checkpoint":{"frame":"12 ✓"}}`).must(t, 200, nil)
		var fin api.FinishResponse
		w.do("POST", base+"/complete", `{`+lease+`,"result":{"out":"ok 😀"}}`).must(t, 200, &fin)
		if fin.State != api.StateSucceeded {
			t.Fatalf("complete: state %s", fin.State)
		}
		var got api.Job
		s.do("GET", "/api/v1/jobs/"+id, "").must(t, 200, &got)
		if got.Progress.Phase != "encode é" || string(got.Checkpoint) != `{"frame":"12 ✓"}` || string(got.Result) != `{"out":"ok 😀"}` {
			t.Fatalf("the correct calls were not kept: %+v", got)
		}
	})
}

// TestWorkerErrorCutOnRuneBoundary: an error text over its limit (64 KiB)
// is cut to the limit on a rune boundary, whatever the width of the
// character that straddles it, and kept as valid UTF-8.
func TestWorkerErrorCutOnRuneBoundary(t *testing.T) {
	const limit = 64 << 10
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret, MaxBodyBytes: 4 * limit})
		w := s.registerWorker(t, "w1")
		for _, wide := range []string{"é", "✓", "😀"} {
			for shift := range utf8.RuneLen([]rune(wide)[0]) {
				// The wide character starts shift bytes before the limit
				// (and, for shift 0, exactly at it).
				sent := strings.Repeat("a", limit-shift) + strings.Repeat(wide, 3)
				cj := w.claim(t, "cut")
				body, _ := json.Marshal(api.FailRequest{LeaseToken: cj.LeaseToken, Error: sent})
				var fin api.FinishResponse
				w.do("POST", "/api/v1/worker/jobs/"+cj.ID.String()+"/fail", string(body)).must(t, 200, &fin)
				j, err := st.JobGet(context.Background(), cj.ID)
				if err != nil {
					t.Fatal(err)
				}
				kept := j.LastError
				if !utf8.ValidString(kept) || len(kept) > limit || !strings.HasPrefix(sent, kept) || len(kept) < limit-utf8.UTFMax {
					t.Fatalf("%s at -%d: kept %d bytes (valid UTF-8 %v, ends %q)", wide, shift, len(kept), utf8.ValidString(kept), kept[max(0, len(kept)-8):])
				}
			}
		}
	})
}
