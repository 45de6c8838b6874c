package httpapi_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// insertDirect inserts a job through the store, as jobd's own services
// do (the API refuses their queues), and returns it.
func insertDirect(t *testing.T, st store.Store, p job.InsertParams) *job.Job {
	t.Helper()
	res, err := st.JobInsertMany(context.Background(), []job.InsertParams{p})
	if err != nil {
		t.Fatalf("insert %+v: %v", p, err)
	}
	return res[0].Job
}

// getJob reads a job through the store.
func getJob(t *testing.T, st store.Store, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := st.JobGet(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// registerWorkerWith registers a worker with the body's members (name
// and queues) and returns it and its record.
func (s *testServer) registerWorkerWith(t *testing.T, body string) (*remoteWorker, api.Worker) {
	t.Helper()
	var created api.WorkerCreated
	s.do("POST", "/api/v1/workers", body).must(t, 201, &created)
	return &remoteWorker{s: s, key: created.APIKey}, created.Worker
}

// TestClaimReservedQueues: a remote worker, registered without queues,
// claims from none of jobd's own queues: the claim is 403 naming queues,
// whether it names one alone or beside a queue of its own, and nothing is
// claimed; the gateway's job, which holds the caller's Cookie, stays
// queued and unread.
func TestClaimReservedQueues(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "any")
		gw := insertDirect(t, st, job.InsertParams{Queue: "gateway", Kind: "gateway.request",
			Args: json.RawMessage(`{"header":{"Cookie":["session=secret-cookie"]},"body":"c2VjcmV0"}`)})
		proc := insertDirect(t, st, job.InsertParams{Queue: "processes", Kind: "process.task"})
		hook := insertDirect(t, st, job.InsertParams{Queue: "jobd.webhooks", Kind: "jobd.webhook"})
		mine := s.submit(t, `{"kind":"k"}`, 201)
		for _, queues := range []string{`["gateway"]`, `["processes"]`, `["jobd.webhooks"]`, `["jobd.anything"]`, `["default","gateway"]`} {
			r := w.do("POST", "/api/v1/worker/claim", `{"queues":`+queues+`,"max":10}`)
			r.problem(t, 403, "queues")
			if strings.Contains(string(r.body), "secret-cookie") {
				t.Fatalf("the refusal shows the gateway job's args: %s", r.body)
			}
		}
		for _, id := range []uuid.UUID{gw.ID, proc.ID, hook.ID, mine.ID} {
			if j := getJob(t, st, id); j.State != job.StateQueued || j.Attempt != 0 {
				t.Errorf("job %s of %s is %s, attempt %d after the refused claims; want queued, 0", id, j.Queue, j.State, j.Attempt)
			}
		}
		// Its own queue it claims as before.
		var got api.ClaimResponse
		w.do("POST", "/api/v1/worker/claim", `{"queues":["default"]}`).must(t, 200, &got)
		if len(got.Jobs) != 1 || got.Jobs[0].ID != mine.ID {
			t.Fatalf("claim of default = %+v, want %s", got.Jobs, mine.ID)
		}
	})
}

// TestClaimWorkerQueues: a worker registered with video.* claims from
// video.hd, and a claim naming audio or video itself is 403 naming
// queues, with nothing claimed, even beside video.hd. The registry shows
// its queues; a worker registered with bad ones is refused, naming
// queues, and none is stored.
func TestClaimWorkerQueues(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w, rec := s.registerWorkerWith(t, `{"name":"video box","queues":["video.*","video.*"]}`)
		if !slices.Equal(rec.Queues, []string{"video.*"}) {
			t.Fatalf("registered worker's queues = %v, want [video.*]", rec.Queues)
		}
		var list api.WorkerList
		s.do("GET", "/api/v1/workers", "").must(t, 200, &list)
		if len(list.Workers) != 1 || !slices.Equal(list.Workers[0].Queues, []string{"video.*"}) {
			t.Fatalf("GET /api/v1/workers = %+v, want the worker with queues [video.*]", list.Workers)
		}
		hd := s.submit(t, `{"kind":"k","queue":"video.hd"}`, 201)
		audio := s.submit(t, `{"kind":"k","queue":"audio"}`, 201)
		video := s.submit(t, `{"kind":"k","queue":"video"}`, 201)
		for _, queues := range []string{`["audio"]`, `["video"]`, `["video.hd","audio"]`, `["default"]`} {
			w.do("POST", "/api/v1/worker/claim", `{"queues":`+queues+`,"max":5}`).problem(t, 403, "queues")
		}
		for _, j := range []api.Job{hd, audio, video} {
			if got := getJob(t, st, j.ID); got.State != job.StateQueued {
				t.Fatalf("job of %s is %s after the refused claims, want queued", j.Queue, got.State)
			}
		}
		var got api.ClaimResponse
		w.do("POST", "/api/v1/worker/claim", `{"queues":["video.hd"],"max":5}`).must(t, 200, &got)
		if len(got.Jobs) != 1 || got.Jobs[0].ID != hd.ID {
			t.Fatalf("claim of video.hd = %+v, want %s", got.Jobs, hd.ID)
		}

		for _, bad := range []string{`["gateway"]`, `["jobd.*"]`, `[""]`, `["video*"]`, `"video"`} {
			r := s.do("POST", "/api/v1/workers", `{"name":"bad","queues":`+bad+`}`)
			want := 422
			if bad == `"video"` {
				want = 400
			}
			r.problem(t, want, "queues")
		}
		s.do("GET", "/api/v1/workers", "").must(t, 200, &list)
		if len(list.Workers) != 1 {
			t.Fatalf("%d workers after the refusals, want 1", len(list.Workers))
		}
	})
}

// limitedKey creates a key of scopes limited to queues (JSON arrays).
func (s *testServer) limitedKey(t *testing.T, scopes, queues string) api.Key {
	t.Helper()
	var k api.Key
	s.do("POST", "/api/v1/keys", `{"name":"limited","scopes":`+scopes+`,"queues":`+queues+`}`).must(t, 201, &k)
	return k
}

// TestQueueLimitedKey: a key limited to video.* and audio submits only
// to them (403 naming queue elsewhere, the default queue included); a
// job of another queue is 404 on every route that reads one, exactly as
// an unknown id; the list and its counts hold only its queues (a queue
// filter naming another is an empty page); GET /api/v1/queues shows only
// its queues; every route that is not one queue's is 403 naming queues.
func TestQueueLimitedKey(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		k := s.limitedKey(t, `["submit","read"]`, `["video.*","audio"]`)
		if !slices.Equal(k.Queues, []string{"video.*", "audio"}) {
			t.Fatalf("created key's queues = %v", k.Queues)
		}
		var keys api.KeyList
		s.do("GET", "/api/v1/keys", "").must(t, 200, &keys)
		if len(keys.Keys) != 1 || !slices.Equal(keys.Keys[0].Queues, k.Queues) {
			t.Fatalf("GET /api/v1/keys = %+v", keys.Keys)
		}
		as := "Authorization: Bearer " + k.Key
		other := s.submit(t, `{"kind":"k","queue":"other"}`, 201)
		s.submit(t, `{"kind":"k"}`, 201)

		// Submissions.
		var hd, au api.Job
		s.do("POST", "/api/v1/jobs", `{"kind":"k","queue":"video.hd"}`, as).must(t, 201, &hd)
		s.do("POST", "/api/v1/jobs", `{"kind":"k","queue":"audio"}`, as).must(t, 201, &au)
		before := countJobs(t, st)
		for _, body := range []string{`{"kind":"k"}`, `{"kind":"k","queue":"video"}`, `{"kind":"k","queue":"other"}`} {
			s.do("POST", "/api/v1/jobs", body, as).problem(t, 403, "queue")
		}
		s.do("POST", "/api/v1/jobs/trigger", `{"task":"k","queue":"other"}`, as).problem(t, 403, "queue")
		s.do("POST", "/api/v1/jobs/trigger", `{"task":"k","queue":"video.sd"}`, as).must(t, 201, nil)
		if n := countJobs(t, st); n != before+1 {
			t.Fatalf("%d jobs after the refused submissions and one trigger, want %d", n, before+1)
		}

		// A job of another queue reads as an unknown one.
		unknown := uuid.New().String()
		for _, suffix := range []string{"", "/status", "/events", "/stream", "?wait=1s"} {
			want := s.do("GET", "/api/v1/jobs/"+unknown+suffix, "", as)
			want.problem(t, 404, "")
			got := s.do("GET", "/api/v1/jobs/"+other.ID.String()+suffix, "", as)
			got.problem(t, 404, "")
			if string(got.body) != string(want.body) {
				t.Errorf("GET …%s of another queue's job: %s; of an unknown job: %s", suffix, got.body, want.body)
			}
			s.do("GET", "/api/v1/jobs/"+hd.ID.String()+strings.Replace(suffix, "/stream", "/events", 1), "", as).must(t, 200, nil)
		}

		// Lists and counts.
		list := func(query string) (api.JobList, string) {
			var l api.JobList
			r := s.do("GET", "/api/v1/jobs"+query, "", as).must(t, 200, &l)
			return l, r.header.Get("X-Total-Count")
		}
		l, total := list("")
		if len(l.Jobs) != 3 || l.Total != 3 || total != "3" {
			t.Fatalf("the limited key's list: %d jobs, total %d, X-Total-Count %s; want its 3", len(l.Jobs), l.Total, total)
		}
		for _, j := range l.Jobs {
			if j.Queue != "video.hd" && j.Queue != "audio" && j.Queue != "video.sd" {
				t.Errorf("listed a job of %s", j.Queue)
			}
		}
		if l, total = list("?queue=other"); len(l.Jobs) != 0 || l.Total != 0 || total != "0" {
			t.Errorf("?queue=other: %d jobs, total %d, X-Total-Count %s; want an empty page", len(l.Jobs), l.Total, total)
		}
		if l, total = list("?queue=audio&limit=0"); l.Total != 1 || total != "1" {
			t.Errorf("?queue=audio&limit=0: total %d, X-Total-Count %s; want 1", l.Total, total)
		}
		if l, _ = list("?updated_since=2000-01-01T00:00:00Z&limit=1"); len(l.Jobs) != 1 || l.Total != 3 {
			t.Errorf("the feed: %d jobs, total %d; want 1 of 3", len(l.Jobs), l.Total)
		}
		var qs api.QueueList
		s.do("GET", "/api/v1/queues", "", as).must(t, 200, &qs)
		var names []string
		for _, q := range qs.Queues {
			names = append(names, q.Name)
		}
		if !slices.Equal(names, []string{"audio", "video.hd", "video.sd"}) {
			t.Errorf("GET /api/v1/queues with the limited key: %v", names)
		}

		// Every other route is refused before it runs.
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/status", ""}, {"GET", "/api/v1/schedules", ""}, {"GET", "/api/v1/processes/ns", ""},
			{"POST", "/api/v1/processes/ns/p1", `{}`}, {"GET", "/api/v1/async/pending", ""},
			{"GET", "/api/v1/keys", ""}, {"POST", "/api/v1/jobs/" + hd.ID.String() + "/cancel", ""},
		} {
			r := s.do(c.method, c.path, c.body, as)
			if c.path == "/api/v1/keys" || strings.HasSuffix(c.path, "/cancel") {
				r.problem(t, 403, "") // the scope it lacks is said first
				continue
			}
			r.problem(t, 403, "queues")
		}
	})
}

// TestQueueLimitedKeyRefused: a key of scope admin or metrics cannot be
// limited to queues (admin means every route; metrics every queue's
// figures), nor can any key be given bad queues: 422 naming queues, and
// no key is stored.
func TestQueueLimitedKeyRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		for _, c := range []struct{ scopes, queues string }{
			{`["admin"]`, `["video"]`}, {`["read","admin"]`, `["video"]`}, {`["metrics"]`, `["video"]`},
			{`["read"]`, `["gateway"]`}, {`["read"]`, `["jobd.*"]`}, {`["read"]`, `["*"]`}, {`["read"]`, `[""]`},
		} {
			s.do("POST", "/api/v1/keys", `{"name":"x","scopes":`+c.scopes+`,"queues":`+c.queues+`}`).problem(t, 422, "queues")
		}
		var keys api.KeyList
		s.do("GET", "/api/v1/keys", "").must(t, 200, &keys)
		if len(keys.Keys) != 0 {
			t.Fatalf("%d keys stored after the refusals", len(keys.Keys))
		}
		// An admin key without queues lists none.
		var k api.Key
		s.do("POST", "/api/v1/keys", `{"name":"a","scopes":["admin"],"queues":[]}`).must(t, 201, &k)
		if k.Queues == nil || len(k.Queues) != 0 {
			t.Fatalf("an admin key's queues = %#v, want []", k.Queues)
		}
	})
}

// TestCancelScope: a key of scopes submit and cancel cancels the jobs it
// submitted; a submit key gets 403; a cancel key limited to queues gets
// 404 for a job of another queue (which stays as it was), and cannot
// retry; an unlimited cancel key and an admin key cancel any job.
func TestCancelScope(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		var submitOnly, cancelAny, adminKey api.Key
		s.do("POST", "/api/v1/keys", `{"name":"s","scopes":["submit"]}`).must(t, 201, &submitOnly)
		s.do("POST", "/api/v1/keys", `{"name":"c","scopes":["cancel"]}`).must(t, 201, &cancelAny)
		s.do("POST", "/api/v1/keys", `{"name":"a","scopes":["admin"]}`).must(t, 201, &adminKey)
		caller := s.limitedKey(t, `["submit","cancel"]`, `["video.*"]`)
		as := func(k api.Key) string { return "Authorization: Bearer " + k.Key }

		var mine api.Job
		s.do("POST", "/api/v1/jobs", `{"kind":"k","queue":"video.hd"}`, as(caller)).must(t, 201, &mine)
		var canceled api.Job
		s.do("POST", "/api/v1/jobs/"+mine.ID.String()+"/cancel", "", as(caller)).must(t, 200, &canceled)
		if canceled.State != api.StateCanceled {
			t.Fatalf("canceled job is %s", canceled.State)
		}
		s.do("POST", "/api/v1/jobs/"+mine.ID.String()+"/retry", "", as(caller)).problem(t, 403, "")

		var theirs api.Job
		s.do("POST", "/api/v1/jobs", `{"kind":"k","queue":"other"}`, as(submitOnly)).must(t, 201, &theirs)
		s.do("POST", "/api/v1/jobs/"+theirs.ID.String()+"/cancel", "", as(submitOnly)).problem(t, 403, "")
		s.do("POST", "/api/v1/jobs/"+theirs.ID.String()+"/cancel", "", as(caller)).problem(t, 404, "")
		s.do("POST", "/api/v1/jobs/"+uuid.NewString()+"/cancel", "", as(caller)).problem(t, 404, "")
		if j := getJob(t, st, theirs.ID); j.State != job.StateQueued || j.CancelRequested {
			t.Fatalf("the other queue's job is %s (cancel requested %v) after the refusals", j.State, j.CancelRequested)
		}
		s.do("POST", "/api/v1/jobs/"+theirs.ID.String()+"/cancel", "", as(cancelAny)).must(t, 200, nil)
		var again api.Job
		s.do("POST", "/api/v1/jobs", `{"kind":"k","queue":"other"}`, as(submitOnly)).must(t, 201, &again)
		s.do("POST", "/api/v1/jobs/"+again.ID.String()+"/cancel", "", as(adminKey)).must(t, 200, nil)
		// The cancel key reads nothing.
		s.do("GET", "/api/v1/jobs/"+again.ID.String(), "", as(cancelAny)).problem(t, 403, "")
	})
}

// TestQueueLimitedIdempotencyKey: a limited key that submits with the
// idempotency key of a job of a queue it cannot see learns nothing of
// that job.
func TestQueueLimitedIdempotencyKey(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		hidden := s.submit(t, `{"kind":"k","queue":"other","idempotency_key":"shared"}`, 201)
		k := s.limitedKey(t, `["submit","read"]`, `["video.*"]`)
		r := s.do("POST", "/api/v1/jobs", `{"kind":"k","queue":"video.hd","idempotency_key":"shared"}`, "Authorization: Bearer "+k.Key)
		if r.status < 400 || r.status >= 500 || strings.Contains(string(r.body), hidden.ID.String()) {
			t.Fatalf("a limited key reusing another queue's idempotency key: %d %s", r.status, r.body)
		}
	})
}
