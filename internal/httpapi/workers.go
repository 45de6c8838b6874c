package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// maxWorkerField bounds a worker's capabilities and metadata (10 KiB each).
const maxWorkerField = 10 << 10

// createWorker: POST /api/v1/workers {name, capabilities, queues,
// metadata} → 201 {worker_id, api_key, worker}. The key, of scope worker,
// is shown this once; only its SHA-256 is stored. queues (optional,
// job.ParseQueuePatterns) limits the worker's claims; it cannot be
// changed later (register a new worker instead).
func (s *server) createWorker(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	var req api.WorkerRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	name := strings.TrimSpace(req.Name)
	if name == "" || len(name) > 128 || !utf8.ValidString(name) || strings.ContainsFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return job.Invalid("name", "is required: 1 to 128 bytes of printable UTF-8")
	}
	if b, _ := json.Marshal(req.Capabilities); len(b) > maxWorkerField {
		return job.Invalid("capabilities", "is over the limit of %d bytes", maxWorkerField)
	}
	caps, err := job.NormalizeCapabilities("capabilities", req.Capabilities)
	if err != nil {
		return err
	}
	queues, err := job.ParseQueuePatterns("queues", req.Queues)
	if err != nil {
		return err
	}
	meta := bytes.TrimSpace(req.Metadata)
	if len(meta) == 0 || string(meta) == "null" {
		meta = []byte(`{}`)
	}
	if len(meta) > maxWorkerField {
		return job.Invalid("metadata", "is over the limit of %d bytes", maxWorkerField)
	}
	if meta[0] != '{' {
		return job.Invalid("metadata", "must be a JSON object")
	}
	if err := job.CheckJSON("metadata", meta); err != nil {
		return err
	}
	wid, err := uuid.NewV7()
	if err != nil {
		return err
	}
	kid, err := uuid.NewV7()
	if err != nil {
		return err
	}
	key, prefix, err := newKey()
	if err != nil {
		return err
	}
	rec := store.Worker{ID: wid.String(), Name: name, Capabilities: caps, Queues: queues, Metadata: meta}
	krec := store.APIKey{
		ID: kid.String(), Name: "worker " + name, Prefix: prefix, Hash: hashKey(key),
		Scopes: []string{api.ScopeWorker}, WorkerID: rec.ID,
	}
	if err := s.store.WorkerCreate(r.Context(), rec, krec); err != nil {
		return err
	}
	got, err := s.store.WorkerGet(r.Context(), rec.ID)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/workers/"+rec.ID)
	return writeJSON(w, http.StatusCreated, api.WorkerCreated{WorkerID: rec.ID, APIKey: key, Worker: toAPIWorker(*got)})
}

// listWorkers: GET /api/v1/workers.
func (s *server) listWorkers(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	ws, err := s.store.WorkerList(r.Context())
	if err != nil {
		return err
	}
	out := api.WorkerList{Workers: make([]api.Worker, len(ws))}
	for i, x := range ws {
		out.Workers[i] = toAPIWorker(x)
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *server) disableWorker(w http.ResponseWriter, r *http.Request) error {
	return s.setWorkerDisabled(w, r, true)
}

func (s *server) enableWorker(w http.ResponseWriter, r *http.Request) error {
	return s.setWorkerDisabled(w, r, false)
}

// setWorkerDisabled: POST /api/v1/workers/{id}/disable or enable → the
// worker.
func (s *server) setWorkerDisabled(w http.ResponseWriter, r *http.Request, disabled bool) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := workerPathID(r)
	if err != nil {
		return err
	}
	x, err := s.store.WorkerSetDisabled(r.Context(), id, disabled)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toAPIWorker(*x))
}

// deleteWorker: DELETE /api/v1/workers/{id} → 204; its keys are revoked.
func (s *server) deleteWorker(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := workerPathID(r)
	if err != nil {
		return err
	}
	if err := s.store.WorkerDelete(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// workerPathID reads the {id} of a worker route: a worker id is a UUID
// (createWorker makes them), and any other text, which could not be
// stored (NUL, invalid UTF-8), names no worker.
func workerPathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if _, err := uuid.Parse(id); err != nil {
		return "", badRequest("id", "id must be a worker id (a UUID), got %q", id)
	}
	return id, nil
}

func toAPIWorker(w store.Worker) api.Worker {
	status := string(w.Status)
	if w.Disabled {
		status = api.WorkerDisabled
	}
	meta := w.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage(`{}`)
	}
	return api.Worker{
		ID: w.ID, Name: w.Name, Status: status, Capabilities: orEmpty(w.Capabilities), Queues: orEmpty(w.Queues),
		Metadata: meta, LastHeartbeatAt: utc(w.LastHeartbeatAt), CurrentJobs: w.RunningJobs,
		JobsDone: w.JobsDone, JobsFailed: w.JobsFailed, CreatedAt: w.CreatedAt.UTC(),
	}
}
