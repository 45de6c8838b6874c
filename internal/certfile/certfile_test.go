package certfile_test

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/internal/certfile"
	"github.com/jobd/jobd/internal/testutil/testcert"
)

// TestRotation: a TLS server with a Reloader serves the files' pair, the
// new pair once the files are replaced, and keeps the last good pair
// while a rotation is half done (a new certificate beside the old key).
func TestRotation(t *testing.T) {
	ca := testcert.NewCA(t, "test CA")
	dir := t.TempDir()
	certPath, keyPath := ca.WriteLeaf(t, dir, "first")
	r, err := certfile.New(certPath, keyPath, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS12}}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close(); <-done })
	addr := ln.Addr().String()

	if got := testcert.ServedName(t, addr); got != "first" {
		t.Fatalf("served %q, want first", got)
	}

	// Half a rotation: the new certificate, the old key. The old pair
	// stays in use.
	secondCert, secondKey := ca.Leaf(t, "second")
	testcert.WriteFile(t, certPath, secondCert)
	if got := testcert.ServedName(t, addr); got != "first" {
		t.Fatalf("served %q while the key was not replaced yet, want first", got)
	}
	testcert.WriteFile(t, keyPath, secondKey)
	if got := testcert.ServedName(t, addr); got != "second" {
		t.Fatalf("served %q once both files were replaced, want second", got)
	}

	// A file that is gone for a moment (replaced by remove and create)
	// does not stop the serving either.
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	if got := testcert.ServedName(t, addr); got != "second" {
		t.Fatalf("served %q without a key file, want second", got)
	}
}

// TestNewRefusesABadPair: a pair that does not load is an error at
// start, naming the files.
func TestNewRefusesABadPair(t *testing.T) {
	ca := testcert.NewCA(t, "test CA")
	dir := t.TempDir()
	certPath, keyPath := ca.WriteLeaf(t, dir, "first")
	_, otherKey := ca.Leaf(t, "other")
	testcert.WriteFile(t, keyPath, otherKey)
	_, err := certfile.New(certPath, keyPath, nil)
	if err == nil || !strings.Contains(err.Error(), certPath) {
		t.Fatalf("New with a key of another certificate: %v, want an error naming the files", err)
	}
	if _, err := certfile.New(filepath.Join(dir, "missing.pem"), keyPath, nil); err == nil {
		t.Fatal("New with a missing certificate file: no error")
	}
}
