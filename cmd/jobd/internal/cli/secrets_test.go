package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/internal/testutil/pgtest"
)

// TestNoSecretInLogs runs jobd serve at debug level, on each store, with
// an admin secret, an upstream and a processor whose URLs carry
// credentials, and drives real traffic and faults through it: keys
// created and used, wrong and malformed credentials, an upstream that
// fails, a processor that cannot be reached (its error, which names its
// URL, is logged with the job's outcome), a database URL with a password
// that cannot be reached. No line of the log, at any level, nor the
// commands' error output, may hold any of the secrets.
func TestNoSecretInLogs(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			database := "sqlite:" + filepath.Join(t.TempDir(), "jobd.db")
			if driver == "postgres" {
				database = pgtest.NewDatabase(t)
			}
			testNoSecretInLogs(t, database)
		})
	}
}

func testNoSecretInLogs(t *testing.T, database string) {
	const (
		admin     = "adm1n-s3cret-xyzzy"
		upPass    = "up-pass-31337"
		procPass  = "proc-pass-4242"
		dbPass    = "db-pass-9090"
		wrongKey  = "jobd_0123456789ab_00000000000000000000000000000000000000000000000000000000deadbeef"
		bearerTok = "some-bearer-token-77"
	)
	secrets := []string{admin, upPass, procPass, dbPass, wrongKey, bearerTok,
		base64.StdEncoding.EncodeToString([]byte("gw:" + upPass))}

	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream is down", http.StatusServiceUnavailable)
	}))
	defer upstream.Close()
	upURL := strings.Replace(upstream.URL, "http://", "http://gw:"+upPass+"@", 1)
	// A processor that fails, echoing the credential it was sent (Go's
	// client sends a URL's user information as Basic authentication): its
	// error, logged with the task's outcome, carries it.
	processor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused "+r.Header.Get("Authorization"), http.StatusInternalServerError)
	}))
	defer processor.Close()
	procURL := strings.Replace(processor.URL, "http://", "http://proc:"+procPass+"@", 1) + "/"
	secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte("proc:"+procPass)))

	stderr := &lockedBuffer{}
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(k string) string {
		return map[string]string{
			"JOBD_ADMIN_SECRET": admin,
			"JOBD_PROCESSORS":   `[{"namespace":"counters","url":"` + procURL + `","timeout":"5s"}]`,
		}[k]
	}}
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- Main(ctx, []string{"serve", "--database", database, "--listen", "127.0.0.1:0", "--log-level", "debug",
			"--upstream", "reports=" + upURL}, env)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if code := <-exit; code != 0 {
				t.Errorf("serve exited %d", code)
			}
		}
	}
	defer stop()
	base := serveAddress(t, stderr)

	do := func(method, path, cred, body string, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if cred != "" {
			req.Header.Set("Authorization", cred)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Keys: one created (its secret joins the list), wrong ones used.
	code, body := do("POST", "/api/v1/keys", "Bearer "+admin, `{"name":"k","scopes":["submit","read"]}`)
	key := regexp.MustCompile(`"key":"(jobd_[^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusCreated || key == nil {
		t.Fatalf("create key: %d %s", code, body)
	}
	secrets = append(secrets, key[1])
	code, body = do("POST", "/api/v1/workers", "Bearer "+admin, `{"name":"w1"}`)
	wkey := regexp.MustCompile(`"api_key":"(jobd_[^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusCreated || wkey == nil {
		t.Fatalf("register worker: %d %s", code, body)
	}
	secrets = append(secrets, wkey[1])
	for _, cred := range []string{"Bearer " + wrongKey, "Bearer " + bearerTok, "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+admin)), "Bearer " + admin + "x"} {
		if code, _ := do("GET", "/api/v1/jobs?token="+bearerTok, cred, ""); code != http.StatusUnauthorized {
			t.Errorf("a wrong credential: %d", code)
		}
	}
	if code, _ := do("POST", "/api/v1/jobs", "Bearer "+key[1], `{"kind":"noop"}`); code != http.StatusCreated {
		t.Errorf("submit: %d", code)
	}
	if code, _ := do("POST", "/api/v1/worker/claim", "Bearer "+wkey[1], `{"queues":["default"],"max":1}`); code != http.StatusOK {
		t.Errorf("worker claim: %d", code)
	}
	// The upstream fails, synchronously and asynchronously.
	if code, _ := do("GET", "/gw/reports/x?secret="+bearerTok, "Bearer "+admin, ""); code != http.StatusServiceUnavailable {
		t.Errorf("sync gateway call: %d", code)
	}
	req, _ := http.NewRequest("POST", base+"/gw/reports/y", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+key[1])
	req.Header.Set("X-Async", "store")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	asyncID := resp.Header.Get("X-Async-Id")
	if resp.StatusCode != http.StatusAccepted || asyncID == "" {
		t.Fatalf("async gateway call: %d", resp.StatusCode)
	}
	// The processor fails: the init fails, logged with its error.
	if code, body := do("POST", "/api/v1/processes/counters/c1?timeout=30s", "Bearer "+admin, `{"args":{}}`); code != http.StatusBadGateway {
		t.Errorf("init with a failing processor: %d %s", code, body)
	}
	// The async call's first attempt fails (a bounded poll of the API:
	// the work runs apart); its outcome is logged before the engine stops.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, body := do("GET", "/api/v1/jobs/"+asyncID, "Bearer "+admin, ""); strings.Contains(body, "the upstream answered 503") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream call did not fail")
		}
	}
	stop()

	// A database URL with a password that cannot be reached.
	bad := fmt.Sprintf("postgres://jobd:%s@127.0.0.1:1/jobd?connect_timeout=2", dbPass)
	migrateErr := &lockedBuffer{}
	if code := Main(context.Background(), []string{"migrate", "--database", bad},
		&Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: migrateErr, Getenv: func(string) string { return "" }}); code == 0 {
		t.Errorf("migrate on an unreachable database succeeded")
	}

	logs := stderr.String() + migrateErr.String()
	if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "http request") {
		t.Fatalf("no debug lines or request lines were logged:\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		for _, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("a log line holds the secret %q:\n%s", s, line)
			}
		}
	}
}

// serveAddress waits (a bounded poll of the log: the server starts apart)
// for serve's address.
func serveAddress(t *testing.T, stderr *lockedBuffer) string {
	t.Helper()
	addr := regexp.MustCompile(`"jobd serving" addr=(\S+)`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			return "http://" + m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", stderr)
		}
	}
}
