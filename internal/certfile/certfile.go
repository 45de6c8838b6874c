// Package certfile serves a TLS certificate from a pair of PEM files, for
// jobd serve --tls-cert/--tls-key, and picks up a new pair when the files
// change, so that certificates rotate without a restart.
package certfile

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// Reloader holds the certificate of a certificate file and a key file.
// Its GetCertificate, for tls.Config, looks at the files at each
// handshake (two stat calls) and loads them again when either changed
// (another file, size or modification time). A pair that does not load
// (half written: a new certificate beside the old key) leaves the last
// good certificate in use, and is tried again once the files change
// again. It is safe for concurrent use.
type Reloader struct {
	certPath, keyPath string
	log               *slog.Logger

	mu   sync.Mutex
	cert *tls.Certificate
	// seen are the files as they were when last loaded or tried.
	seen [2]os.FileInfo
}

// New loads the pair at certPath and keyPath (PEM) and returns a Reloader
// serving it; an error when it does not load. log (nil: slog.Default())
// hears of every change of the files, loaded or refused.
func New(certPath, keyPath string, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.Default()
	}
	r := &Reloader{certPath: certPath, keyPath: keyPath, log: log}
	seen, err := r.stat()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", certPath, keyPath, err)
	}
	r.cert, r.seen = &cert, seen
	return r, nil
}

// GetCertificate returns the certificate to present: the files' current
// pair, loaded again if they changed since, or the last good one.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen, err := r.stat()
	if err != nil {
		if r.cert == nil {
			return nil, err
		}
		return r.cert, nil // a file being replaced: keep serving the last pair
	}
	if sameFile(seen[0], r.seen[0]) && sameFile(seen[1], r.seen[1]) {
		return r.cert, nil
	}
	r.seen = seen
	cert, err := tls.LoadX509KeyPair(r.certPath, r.keyPath)
	if err != nil {
		r.log.Warn("TLS certificate files changed but do not load; serving the previous certificate until they change again",
			"cert", r.certPath, "key", r.keyPath, "err", err)
		return r.cert, nil
	}
	r.cert = &cert
	r.log.Info("TLS certificate reloaded", "cert", r.certPath, "key", r.keyPath)
	return r.cert, nil
}

// stat reads the files' metadata.
func (r *Reloader) stat() ([2]os.FileInfo, error) {
	var out [2]os.FileInfo
	for i, p := range []string{r.certPath, r.keyPath} {
		fi, err := os.Stat(p)
		if err != nil {
			return out, fmt.Errorf("TLS certificate: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return out, errors.New("TLS certificate: " + p + " is not a regular file")
		}
		out[i] = fi
	}
	return out, nil
}

// sameFile reports whether a and b are one file, unchanged: the same
// file (a rename over it makes another), size and modification time.
func sameFile(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
