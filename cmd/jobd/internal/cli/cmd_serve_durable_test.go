package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
)

// TestServeDurableLimits: jobd serve's --max-steps,
// --max-step-result-bytes and --max-children reach the remote worker
// routes of the server jobd.NewServer builds: past each, a 422 naming
// the field, and nothing written (the job keeps the steps and children
// it had); within them, the same requests pass. On both stores.
func TestServeDurableLimits(t *testing.T) {
	for driver, database := range databases(t) {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			base, _ := startServe(t, database(t), "--max-steps", "2", "--max-step-result-bytes", "64", "--max-children", "3")
			var reg api.WorkerCreated
			mustDo(t, base, "", "POST", "/api/v1/workers", `{"name":"w"}`, 201, &reg)
			key := "Bearer " + reg.APIKey
			var sub api.Job
			mustDo(t, base, "", "POST", "/api/v1/jobs", `{"kind":"k","queue":"limits","max_attempts":3}`, 201, &sub)
			var claim api.ClaimResponse
			mustDo(t, base, key, "POST", "/api/v1/worker/claim", `{"queues":["limits"],"max":1}`, 200, &claim)
			if len(claim.Jobs) != 1 {
				t.Fatalf("claimed %d jobs, want 1", len(claim.Jobs))
			}
			cj := claim.Jobs[0]
			path := "/api/v1/worker/jobs/" + cj.ID.String()
			tok := `"lease_token":"` + cj.LeaseToken.String() + `"`

			// A result of 65 bytes of JSON, past 64: 422 naming result.
			big := `"` + strings.Repeat("x", 63) + `"`
			refused(t, base, key, path+"/steps", `{`+tok+`,"name":"big","result":`+big+`}`, "result")
			mustDo(t, base, key, "POST", path+"/steps", `{`+tok+`,"name":"s1","result":1}`, 200, nil)
			mustDo(t, base, key, "POST", path+"/steps", `{`+tok+`,"name":"s2","result":"`+strings.Repeat("x", 62)+`"}`, 200, nil)
			// A third step, past 2: 422 naming name.
			refused(t, base, key, path+"/steps", `{`+tok+`,"name":"s3","result":3}`, "name")

			child := func(key string) string { return `{"key":"` + key + `","kind":"c","queue":"limits-children"}` }
			// Four children at once, past 3: 422 naming children, none spawned.
			refused(t, base, key, path+"/children", `{`+tok+`,"children":[`+child("a")+`,`+child("b")+`,`+child("c")+`,`+child("d")+`]}`, "children")
			mustDo(t, base, key, "POST", path+"/children", `{`+tok+`,"children":[`+child("a")+`,`+child("b")+`]}`, 200, nil)
			// Two more make four, past 3 in all.
			refused(t, base, key, path+"/children", `{`+tok+`,"children":[`+child("c")+`,`+child("d")+`]}`, "children")
			mustDo(t, base, key, "POST", path+"/children", `{`+tok+`,"children":[`+child("c")+`]}`, 200, nil)

			var got api.Job
			mustDo(t, base, "", "GET", "/api/v1/jobs/"+cj.ID.String(), "", 200, &got)
			var names []string
			for _, s := range got.Steps {
				names = append(names, s.Name)
			}
			if fmt.Sprint(names) != "[s1 s2]" {
				t.Errorf("steps %v, want [s1 s2]: a refused step writes nothing", names)
			}
			var page api.JobList
			mustDo(t, base, "", "GET", "/api/v1/jobs?queue=limits-children", "", 200, &page)
			if len(page.Jobs) != 3 {
				t.Errorf("%d children, want 3: a refused spawn writes nothing", len(page.Jobs))
			}
		})
	}
}

// TestServeDurableLimitFlagErrors: a durable limit of zero or less is a
// usage error naming its flag (zero is not "the default" on the command
// line).
func TestServeDurableLimitFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"--max-steps", "0"}, {"--max-step-result-bytes", "-1"}, {"--max-children", "0"}} {
		stderr := &lockedBuffer{}
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(string) string { return "" }}
		all := append([]string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0"}, args...)
		if code := Main(t.Context(), all, env); code != 2 || !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("serve %v: exit %d, want 2 naming the flag (%s)", args, code, stderr)
		}
	}
}

// mustDo sends a request (auth: an Authorization value, or none) and
// decodes its answer into out (nil: none), failing unless it is status.
func mustDo(t *testing.T, base, auth, method, path, body string, status int, out any) {
	t.Helper()
	hdr := []string{"Content-Type: application/json"}
	if auth != "" {
		hdr = append(hdr, "Authorization: "+auth)
	}
	resp, b := get(t, method, base+path, body, hdr...)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, status)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(b), out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// refused posts body and fails unless the answer is a 422 problem
// naming field.
func refused(t *testing.T, base, auth, path, body, field string) {
	t.Helper()
	resp, b := get(t, "POST", base+path, body, "Content-Type: application/json", "Authorization: "+auth)
	var p struct {
		Field string `json:"field"`
	}
	if resp.StatusCode != http.StatusUnprocessableEntity || json.Unmarshal([]byte(b), &p) != nil || p.Field != field {
		t.Fatalf("POST %s: %d %s, want 422 naming %q", path, resp.StatusCode, b, field)
	}
}
