package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

func mustParse(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestClientCommands runs each client command against a live API.
func TestClientCommands(t *testing.T) {
	eachServer(t, func(t *testing.T, s *apiServer) {
		must := func(args ...string) string {
			t.Helper()
			code, out, errOut := s.run(t, args...)
			if code != 0 {
				t.Fatalf("jobd %s: exit %d; stderr %q", strings.Join(args, " "), code, errOut)
			}
			return out
		}

		out := must("submit", "--queue", "mail", "--priority", "5", "--idempotency-key", "once", "send", `{"to":"a@b.c"}`)
		m := regexp.MustCompile(`^([0-9a-f-]{36}) created \(queued\)\n$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("submit printed %q", out)
		}
		id := m[1]
		if out := must("submit", "--queue", "mail", "--priority", "5", "--idempotency-key", "once", "send", `{"to":"a@b.c"}`); out != id+" exists (queued)\n" {
			t.Errorf("resubmit printed %q", out)
		}
		// The key with another request: refused, naming nothing of the job.
		if code, _, errOut := s.run(t, "submit", "--queue", "mail", "--idempotency-key", "once", "send"); code == 0 ||
			!strings.Contains(errOut, "idempotency key was used before with a different request") || strings.Contains(errOut, id) {
			t.Errorf("resubmit with another request: exit %d, stderr %q", code, errOut)
		}
		var j api.Job
		if err := json.Unmarshal([]byte(must("submit", "--json", "--delay", "1h", "other")), &j); err != nil || j.Kind != "other" || j.State != api.StateQueued {
			t.Errorf("submit --json: %+v, %v", j, err)
		}
		s.env["JOBD_QUEUE"] = "from-env"
		if err := json.Unmarshal([]byte(must("submit", "--json", "envy")), &j); err != nil || j.Queue != "from-env" {
			t.Errorf("JOBD_QUEUE: %+v, %v", j, err)
		}
		delete(s.env, "JOBD_QUEUE")

		if out := must("status", id); !strings.Contains(out, "state:") || !strings.Contains(out, "queued") ||
			!strings.Contains(out, "mail") || !strings.Contains(out, `{"to":"a@b.c"}`) {
			t.Errorf("status printed %q", out)
		}
		if out := must("list", "--queue", "mail"); !strings.Contains(out, "ID") || !strings.Contains(out, id) || !strings.Contains(out, "1 of 1 jobs") {
			t.Errorf("list printed %q", out)
		}
		if out := must("list", "--limit", "1"); !strings.Contains(out, "1 of 3 jobs; next page: --cursor ") {
			t.Errorf("list --limit 1 printed %q", out)
		}
		if out := must("list", "--count", "--state", "queued"); out != "3\n" {
			t.Errorf("list --count printed %q", out)
		}
		var page api.JobList
		if err := json.Unmarshal([]byte(must("list", "--json", "--kind", "send")), &page); err != nil || len(page.Jobs) != 1 {
			t.Errorf("list --json: %+v, %v", page, err)
		}

		if out := must("cancel", id); out != id+" canceled\n" {
			t.Errorf("cancel printed %q", out)
		}
		if code, _, errOut := s.run(t, "cancel", id); code != 1 || !strings.Contains(errOut, "409") {
			t.Errorf("second cancel: exit %d, stderr %q", code, errOut)
		}
		if out := must("retry", id); out != id+" queued\n" {
			t.Errorf("retry printed %q", out)
		}

		if out := must("queues", "pause", "mail"); out != "queue mail paused\n" {
			t.Errorf("queues pause printed %q", out)
		}
		if out := must("queues"); !regexp.MustCompile(`(?m)^mail\s+true\s+1\s+0`).MatchString(out) {
			t.Errorf("queues printed %q", out)
		}
		if out := must("queues", "resume", "mail"); out != "queue mail resumed\n" {
			t.Errorf("queues resume printed %q", out)
		}
		if code, _, _ := s.run(t, "queues", "drain", "mail"); code != 2 {
			t.Errorf("queues drain: exit %d, want 2", code)
		}

		out = must("keys", "create", "--name", "ci", "--scopes", "submit,read")
		key := regexp.MustCompile(`jobd_[0-9a-f]{12}_[0-9a-f]{64}`).FindString(out)
		keyID := regexp.MustCompile(`^key (\S+) \(ci\)`).FindStringSubmatch(out)
		if key == "" || keyID == nil {
			t.Fatalf("keys create printed %q", out)
		}
		if out := must("keys"); !strings.Contains(out, keyID[1]) || !strings.Contains(out, "submit,read") || strings.Contains(out, key) {
			t.Errorf("keys printed %q", out)
		}
		// The new key reads but may not cancel.
		if out := must("status", "--key", key, id); !strings.Contains(out, id) {
			t.Errorf("status with the new key printed %q", out)
		}
		if code, _, errOut := s.run(t, "cancel", "--key", key, id); code != 1 || !strings.Contains(errOut, "403") {
			t.Errorf("cancel with a submit,read key: exit %d, stderr %q", code, errOut)
		}
		must("keys", "revoke", keyID[1])
		if code, _, errOut := s.run(t, "status", "--key", key, id); code != 1 || !strings.Contains(errOut, "401") {
			t.Errorf("status with a revoked key: exit %d, stderr %q", code, errOut)
		}
		if code, _, _ := s.run(t, "keys", "create", "--name", "x", "--scopes", "root"); code != 1 {
			t.Errorf("keys create with an unknown scope: exit %d", code)
		}

		for _, args := range [][]string{
			{"submit"}, {"submit", "k", "[1]"}, {"submit", "--run-at", "soon", "k"}, {"submit", "--priority", "high", "k"},
			{"status"}, {"status", "x"}, {"list", "--limit", "0"}, {"list", "--updated-since", "today"}, {"cancel"}, {"retry", "a", "b"},
			{"keys", "create"}, {"keys", "revoke"}, {"keys", "frobnicate"}, {"status", "--server", "localhost:1", id},
		} {
			if code, _, _ := s.run(t, args...); code != 2 {
				t.Errorf("jobd %s: exit %d, want 2", strings.Join(args, " "), code)
			}
		}
	})
}
