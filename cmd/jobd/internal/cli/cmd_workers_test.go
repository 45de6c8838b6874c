package cli

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

// TestKeysQueues: jobd keys create --queues makes a key limited to those
// queues (and --scopes takes cancel), jobd keys list shows them; a key of
// scope admin with queues is refused by the server (exit 1, naming
// queues), and nothing is created.
func TestKeysQueues(t *testing.T) {
	eachServer(t, func(t *testing.T, s *apiServer) {
		code, out, errOut := s.run(t, "keys", "create", "--name", "video", "--scopes", "submit,cancel", "--queues", "video.*, audio")
		if code != 0 || !strings.Contains(out, "created with scopes submit,cancel, queues video.*,audio\n") {
			t.Fatalf("keys create --queues: exit %d, %q, %q", code, out, errOut)
		}
		key := strings.TrimSpace(strings.Split(out, "\n")[1])
		code, out, _ = s.run(t, "keys", "create", "--name", "all", "--scopes", "read")
		if code != 0 || !strings.Contains(out, "queues any\n") {
			t.Fatalf("keys create without --queues: exit %d, %q", code, out)
		}
		code, out, errOut = s.run(t, "keys", "list")
		if code != 0 || !strings.Contains(out, "QUEUES") ||
			!regexp.MustCompile(`(?m)\svideo\s+\S+\s+submit,cancel\s+video\.\*,audio\s`).MatchString(out) ||
			!regexp.MustCompile(`(?m)\sall\s+\S+\s+read\s+any\s`).MatchString(out) {
			t.Fatalf("keys list: exit %d, %q, %q", code, out, errOut)
		}
		code, out, _ = s.run(t, "keys", "--json", "list")
		var list api.KeyList
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Keys) != 2 || !slices.Equal(list.Keys[0].Queues, []string{"video.*", "audio"}) {
			t.Fatalf("keys --json list: exit %d, %q", code, out)
		}
		code, _, errOut = s.run(t, "keys", "create", "--name", "root", "--scopes", "admin", "--queues", "video.*")
		if code != 1 || !strings.Contains(errOut, "queues") {
			t.Fatalf("keys create of an admin key with queues: exit %d, %q", code, errOut)
		}

		// The key works as its scopes and queues say.
		c, err := client.New(s.url, key)
		if err != nil {
			t.Fatal(err)
		}
		j, _, err := c.Submit(t.Context(), api.SubmitRequest{Queue: "audio", Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		s.env["JOBD_KEY"] = key
		if code, out, errOut = s.run(t, "cancel", j.ID.String()); code != 0 {
			t.Fatalf("jobd cancel with the submit,cancel key: exit %d, %q, %q", code, out, errOut)
		}
	})
}

// TestWorkersCommand: jobd workers create registers a worker with its
// capabilities and queues and prints its key once; jobd workers lists
// them; disable, enable and delete act on it; bad queues exit 1 naming
// queues.
func TestWorkersCommand(t *testing.T) {
	eachServer(t, func(t *testing.T, s *apiServer) {
		code, out, errOut := s.run(t, "workers", "create", "--name", "gpu-1", "--capabilities", "gpu", "--queues", "video.*,thumbs", "--metadata", `{"zone":"a"}`)
		m := regexp.MustCompile(`^worker (\S+) \(gpu-1\) registered, queues video\.\*,thumbs\njobd_\S+\n$`).FindStringSubmatch(out)
		if code != 0 || m == nil || !strings.Contains(errOut, "not shown again") {
			t.Fatalf("workers create: exit %d, %q, %q", code, out, errOut)
		}
		id := m[1]
		code, out, _ = s.run(t, "workers", "create", "--name", "any")
		if code != 0 || !strings.Contains(out, "queues any\n") {
			t.Fatalf("workers create without queues: exit %d, %q", code, out)
		}
		code, out, _ = s.run(t, "workers")
		if code != 0 || !strings.Contains(out, "QUEUES") ||
			!regexp.MustCompile(`(?m)^`+id+`\s+gpu-1\s+idle\s+gpu\s+video\.\*,thumbs\s+0\s+0\s+0\s*$`).MatchString(out) {
			t.Fatalf("workers: exit %d, %q", code, out)
		}
		code, out, _ = s.run(t, "workers", "--json", "list")
		var list api.WorkerList
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Workers) != 2 ||
			!slices.Equal(list.Workers[0].Queues, []string{"video.*", "thumbs"}) || len(list.Workers[1].Queues) != 0 {
			t.Fatalf("workers --json list: exit %d, %q", code, out)
		}
		for _, action := range []string{"disable", "enable", "delete"} {
			if code, out, errOut = s.run(t, "workers", action, id); code != 0 || out != "worker "+id+" "+action+"d\n" {
				t.Fatalf("workers %s: exit %d, %q, %q", action, code, out, errOut)
			}
		}
		if code, _, errOut = s.run(t, "workers", "create", "--name", "bad", "--queues", "gateway"); code != 1 || !strings.Contains(errOut, "queues") {
			t.Fatalf("workers create --queues gateway: exit %d, %q", code, errOut)
		}
		for _, args := range [][]string{{"workers", "create"}, {"workers", "disable"}, {"workers", "frob"}, {"workers", "create", "--name", "x", "--metadata", "{"}} {
			if code, _, _ = s.run(t, args...); code != 2 {
				t.Errorf("jobd %s: exit %d, want 2", strings.Join(args, " "), code)
			}
		}
	})
}
