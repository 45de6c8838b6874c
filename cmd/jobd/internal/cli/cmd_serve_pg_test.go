package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestServePostgresFlagErrors: --listen-database and --database-pooler
// are PostgreSQL's, and take what their help says; anything else is a
// usage error (exit 2) naming the flag, before any connection.
func TestServePostgresFlagErrors(t *testing.T) {
	sqlite := "sqlite:" + filepath.Join(t.TempDir(), "jobd.db")
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--database", sqlite, "--listen-database", "postgres://db/jobd"}, "--listen-database"},
		{[]string{"--database", "postgres://127.0.0.1:1/jobd", "--listen-database", "sqlite:x.db"}, "--listen-database"},
		{[]string{"--database", "postgres://127.0.0.1:1/jobd", "--database-pooler", "session"}, "--database-pooler"},
	} {
		var stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
		all := append([]string{"serve", "--listen", "127.0.0.1:0"}, c.args...)
		if code := Main(context.Background(), all, env); code != 2 || !strings.Contains(stderr.String(), c.flag) {
			t.Errorf("serve %v: exit %d, want 2 naming %s (%s)", c.args, code, c.flag, stderr.String())
		}
	}
}
