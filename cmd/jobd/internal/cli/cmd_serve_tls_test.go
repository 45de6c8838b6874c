package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/testutil/testcert"
	"github.com/jobd/jobd/internal/testutil/testsignal"
)

// TestServeTLS: jobd serve with JOBD_TLS_CERT and JOBD_TLS_KEY serves
// HTTPS with a certificate of a private CA. The Go client, the CLI and
// jobd worker reach it with that CA (WithCACert, --ca-cert) and are
// refused without it; once the files are replaced, the new certificate
// is served, without a restart.
func TestServeTLS(t *testing.T) {
	ca := testcert.NewCA(t, "jobd test CA")
	dir := t.TempDir()
	certPath, keyPath := ca.WriteLeaf(t, dir, "first")
	caPath := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caPath, ca.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "tls-admin-secret"

	stderr := &lockedBuffer{}
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(k string) string {
		return map[string]string{"JOBD_TLS_CERT": certPath, "JOBD_TLS_KEY": keyPath, "JOBD_ADMIN_SECRET": secret}[k]
	}}
	testsignal.Of(&env.points.listening).Init()
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- Main(ctx, []string{"serve", "--database", "sqlite:" + filepath.Join(dir, "jobd.db"),
			"--listen", "127.0.0.1:0", "--workers", "[]"}, env)
	}()
	defer func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("serve exited %d: %s", code, stderr)
		}
	}()
	addr := testsignal.Of(&env.points.listening).Wait(t, "serve to listen")
	base := "https://" + addr

	// The Go client: with the CA, and without it.
	admin, err := client.New(base, secret, client.WithCACert(ca.PEM()))
	if err != nil {
		t.Fatal(err)
	}
	j, _, err := admin.Submit(t.Context(), api.SubmitRequest{Kind: "k", Queue: "tls"})
	if err != nil {
		t.Fatalf("submit over HTTPS with the CA: %v", err)
	}
	untrusting, err := client.New(base, secret, client.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusting.Get(t.Context(), j.ID); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without the CA: %v, want a refused certificate", err)
	}

	// The CLI: --ca-cert, or JOBD_CA_CERT.
	cli := func(caCert string, args ...string) (int, string) {
		var out, errOut strings.Builder
		cenv := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
			return map[string]string{"JOBD_KEY": secret, "JOBD_CA_CERT": caCert}[k]
		}}
		code := Main(t.Context(), append(args[:1:1], append([]string{"--server", base}, args[1:]...)...), cenv)
		return code, out.String() + errOut.String()
	}
	if code, out := cli(caPath, "status", j.ID.String()); code != 0 || !strings.Contains(out, j.ID.String()) {
		t.Fatalf("jobd status with the CA: exit %d: %s", code, out)
	}
	if code, out := cli("", "status", j.ID.String()); code == 0 || !strings.Contains(out, "certificate") {
		t.Fatalf("jobd status without the CA: exit %d: %s", code, out)
	}

	// jobd worker --ca-cert runs the job over HTTPS.
	reg, err := admin.CreateWorker(t.Context(), api.WorkerRequest{Name: "tls-worker"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(t.Context())
	workerDone := make(chan int, 1)
	var workerErr strings.Builder
	go func() {
		wenv := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &lockedWriter{w: &workerErr},
			Getenv: func(string) string { return "" }}
		workerDone <- Main(wctx, []string{"worker", "--server", base, "--key", reg.APIKey, "--ca-cert", caPath,
			"--queue", "tls", "--exec", `echo '"over tls"'`, "--claim-wait", "1s"}, wenv)
	}()
	final, err := admin.Wait(t.Context(), j.ID, nil)
	stopWorker()
	if code := <-workerDone; code != 0 {
		t.Fatalf("jobd worker exit %d: %s", code, workerErr.String())
	}
	var res string
	if err != nil || final.State != api.StateSucceeded || json.Unmarshal(final.Result, &res) != nil || res != "over tls" {
		t.Fatalf("the job run by jobd worker over HTTPS: %+v, %v", final, err)
	}

	// Rotation: new files, the new certificate, no restart.
	if got := testcert.ServedName(t, addr); got != "first" {
		t.Fatalf("served %q, want first", got)
	}
	ca.WriteLeaf(t, dir, "second")
	if got := testcert.ServedName(t, addr); got != "second" {
		t.Fatalf("served %q after the rotation, want second", got)
	}
	fresh, err := client.New(base, secret, client.WithCACert(ca.PEM()))
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel2()
	if _, err := fresh.Get(ctx2, j.ID); err != nil {
		t.Fatalf("a client with the CA after the rotation: %v", err)
	}
	other := testcert.NewCA(t, "another CA")
	stranger, err := client.New(base, secret, client.WithCACert(other.PEM()), client.WithoutRetries())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stranger.Get(t.Context(), j.ID); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client trusting another CA: %v, want a refused certificate", err)
	}
}

// TestServeTLSFlags: --tls-cert without --tls-key (and the other way) is
// a usage error, and a pair that does not load stops serve at once.
func TestServeTLSFlags(t *testing.T) {
	ca := testcert.NewCA(t, "jobd test CA")
	dir := t.TempDir()
	certPath, keyPath := ca.WriteLeaf(t, dir, "first")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--tls-cert", certPath}, 2},
		{[]string{"--tls-key", keyPath}, 2},
		{[]string{"--tls-cert", keyPath, "--tls-key", certPath}, 1},
	} {
		var stderr strings.Builder
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
		args := append([]string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0"}, c.args...)
		if code := Main(context.Background(), args, env); code != c.code {
			t.Errorf("serve %v: exit %d, want %d (%s)", c.args, code, c.code, stderr.String())
		}
	}
}
