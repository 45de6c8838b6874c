// Package filetemplate gives each test a copy of a file made once per
// test binary: SQLite's migrated database, which costs ~30 ms of CPU to
// migrate from nothing and ~1 ms to copy. It is the SQLite counterpart
// of pgtest's migrated template database.
package filetemplate

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Template is a file made once, by the first NewCopy, and copied for
// every test.
type Template struct {
	make func(path string) error

	once sync.Once
	data []byte
	err  error
}

// New returns a template whose file make writes at the path it is given
// (make must leave nothing beside it: close a SQLite store, so that its
// WAL is checkpointed into the file).
func New(make func(path string) error) *Template {
	return &Template{make: make}
}

// NewCopy writes a copy of the template's file as name in a new
// temporary directory of t and returns its path.
func (tp *Template) NewCopy(t testing.TB, name string) string {
	t.Helper()
	tp.once.Do(func() {
		dir, err := os.MkdirTemp("", "jobd-filetemplate-")
		if err != nil {
			tp.err = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, name)
		if err := tp.make(path); err != nil {
			tp.err = fmt.Errorf("make the template: %w", err)
			return
		}
		tp.data, tp.err = os.ReadFile(path)
	})
	if tp.err != nil {
		t.Fatalf("filetemplate: %v", tp.err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, tp.data, 0o600); err != nil {
		t.Fatalf("filetemplate: %v", err)
	}
	return path
}
