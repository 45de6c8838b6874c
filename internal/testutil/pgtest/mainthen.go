package pgtest

import (
	"os"
	"testing"
)

// MainThen is Main with cleanup run once the package's tests have ended,
// before the throwaway cluster stops (the removal of what the package's
// tests shared: a binary they built).
func MainThen(m *testing.M, cleanup func()) {
	raiseParallel()
	code := m.Run()
	cleanup()
	dropTemplates()
	if server != nil {
		server.stop()
	}
	os.Exit(code)
}
