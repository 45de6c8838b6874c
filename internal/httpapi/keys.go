package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// createKey: POST /api/v1/keys {name, scopes, queues} → 201 {id, key,
// name, scopes, queues, prefix, created_at}. The key is shown this once;
// only its SHA-256 is stored. queues (optional) limits the key to those
// queues (keyQueues).
func (s *server) createKey(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	var req api.KeyRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	name := strings.TrimSpace(req.Name)
	if name == "" || len(name) > 128 || !utf8.ValidString(name) || strings.ContainsFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return job.Invalid("name", "is required: 1 to 128 bytes of printable UTF-8")
	}
	if len(req.Scopes) == 0 {
		return job.Invalid("scopes", "at least one scope is required (%s)", scopeNames())
	}
	var granted []string
	for _, sc := range req.Scopes {
		if !knownScope(sc) {
			return job.Invalid("scopes", "unknown scope %q; known scopes: %s", sc, scopeNames())
		}
		if !slices.Contains(granted, sc) {
			granted = append(granted, sc)
		}
	}
	queues, err := keyQueues(req, granted)
	if err != nil {
		return err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	key, prefix, err := newKey()
	if err != nil {
		return err
	}
	rec := store.APIKey{
		ID: id.String(), Name: name, Prefix: prefix, Hash: hashKey(key),
		Scopes: granted, Queues: queues, CreatedAt: s.clock.Now().UTC().Truncate(time.Microsecond),
	}
	if err := s.store.KeyCreate(r.Context(), rec); err != nil {
		return err
	}
	out := toAPIKey(rec)
	out.Key = key
	w.Header().Set("Location", "/api/v1/keys/"+rec.ID)
	return writeJSON(w, http.StatusCreated, out)
}

func scopeNames() string {
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = string(sc)
	}
	return strings.Join(names, ", ")
}

// listKeys: GET /api/v1/keys, oldest first, without secrets.
func (s *server) listKeys(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	keys, err := s.store.KeyList(r.Context())
	if err != nil {
		return err
	}
	out := api.KeyList{Keys: make([]api.Key, 0, len(keys))}
	for _, k := range keys {
		out.Keys = append(out.Keys, toAPIKey(k))
	}
	return writeJSON(w, http.StatusOK, out)
}

// revokeKey: DELETE /api/v1/keys/{id} → 204.
func (s *server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	if _, err := uuid.Parse(id); err != nil {
		return badRequest("id", "id must be a key id (a UUID), got %q", id)
	}
	if err := s.store.KeyRevoke(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
