package jobd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// layers places every package of the module on the floors that
// docs/architecture.md draws, the ground first. A package imports only
// packages on its floor or below; a new package must be placed here (the
// test says so) before it can land.
var layers = [][]string{
	// Leaves: types, small helpers, the SDK.
	{"api", "clock", "job", "flow", "observe", "client", "step", "internal/redact",
		"internal/buildinfo", "internal/certfile", "internal/apiconv", "internal/flight"},
	// The store and its drivers.
	{"store", "store/wakeup", "store/postgres", "store/sqlite", "store/storetest"},
	// What runs jobs: the engine, its duties, processes and schedules.
	{"engine", "engine/builtin", "engine/internal/maintenance", "internal/remote",
		"internal/groupinsert", "process", "schedule"},
	// The surfaces: HTTP API, dashboard, gateway, webhooks, telemetry, bench.
	{"internal/web", "internal/httpapi", "internal/gateway", "internal/webhook", "internal/problem",
		"internal/telemetry", "internal/bench"},
	// The composition root.
	{""},
	// The commands.
	{"cmd/jobd/internal/cli", "cmd/jobd"},
}

// testOnly are the folders whose packages only tests import.
var testOnly = []string{"internal/testutil/", "internal/systest/"}

// TestLayers holds the import graph to docs/architecture.md: no package
// imports one on a higher floor, no production package imports a test
// utility, and the folders keep the same order as the packages: a public
// package below the composition root imports nothing from internal/, and
// nothing in internal/ imports the root or the commands.
func TestLayers(t *testing.T) {
	const module = "github.com/jobd/jobd"
	floor := map[string]int{}
	for i, names := range layers {
		for _, n := range names {
			floor[n] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		if isTestOnly(pkg) {
			continue
		}
		from, ok := floor[pkg]
		if !ok {
			t.Errorf("package %q is on no floor: place it in layers (and in docs/architecture.md)", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if isTestOnly(dep) {
				t.Errorf("%q imports the test utility %q", pkg, dep)
				continue
			}
			if to, ok := floor[dep]; ok && to > from {
				t.Errorf("%q (floor %d) imports %q (floor %d): an import that runs back up", pkg, from, dep, to)
			}
			if why := folderOrder(pkg, dep); why != "" {
				t.Errorf("%q imports %q: %s", pkg, dep, why)
			}
		}
	}
}

// folderOrder says why pkg may not import dep by the folders they live
// in, or "". The top folder internal/ stands between the composition
// root (and the commands under cmd/) above it and the public packages
// below it; a package that only one public folder needs lives under that
// folder's own internal/ (engine/internal/maintenance).
func folderOrder(pkg, dep string) string {
	top := func(p string) bool { return p == "" || strings.HasPrefix(p, "cmd/") }
	switch {
	case strings.HasPrefix(dep, "internal/") && !top(pkg) && !strings.HasPrefix(pkg, "internal/"):
		return "a public package below the composition root imports nothing from internal/"
	case strings.HasPrefix(pkg, "internal/") && top(dep):
		return "nothing in internal/ imports the composition root or a command"
	}
	return ""
}

func isTestOnly(pkg string) bool {
	for _, prefix := range testOnly {
		if strings.HasPrefix(pkg, prefix) {
			return true
		}
	}
	return false
}
