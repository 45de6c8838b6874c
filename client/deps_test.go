package client_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The client is light: a program that imports it (a remote worker, an
// HTTP caller) compiles the standard library, github.com/google/uuid,
// the wire types of package api and package step (durable steps, on the
// standard library alone), and nothing of the server, whose
// PostgreSQL and SQLite drivers stay out of its build. It lives in the
// root module (one module: embedders of the engine need no replace nor
// tag of a second one); these tests prove that it stays light.

// lightPackages are the packages, beside the standard library's, that a
// program importing the client may build.
var lightPackages = map[string]bool{
	"github.com/jobd/jobd/client": true,
	"github.com/jobd/jobd/api":    true,
	"github.com/jobd/jobd/step":   true,
	"github.com/google/uuid":      true,
}

// goTool is the go command that runs the tests: `go test` puts its
// GOROOT/bin first in the PATH of the test binary.
func goTool(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to check the client's dependencies: %v", err)
	}
	return goBin
}

// goCmd runs the go command in dir with the caller's environment (its
// GOPROXY, GOFLAGS, GOCACHE, GOMODCACHE) and returns its standard output.
func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out
}

// nonStandard lists, one per line, the packages pkgs depend on that are
// not in the standard library.
func nonStandard(t *testing.T, dir string, pkgs ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, pkgs...)
	return strings.Fields(string(goCmd(t, dir, args...)))
}

// checkLight fails for every dependency that is not a light package,
// naming the server's drivers and packages outright.
func checkLight(t *testing.T, deps []string) {
	t.Helper()
	for _, p := range deps {
		switch {
		case strings.HasPrefix(p, "github.com/jackc/"), strings.HasPrefix(p, "modernc.org/"):
			t.Errorf("a database driver is among the client's dependencies: %s", p)
		case strings.HasPrefix(p, "github.com/jobd/jobd/") && !lightPackages[p]:
			t.Errorf("a server package is among the client's dependencies: %s", p)
		case !lightPackages[p] && !strings.HasPrefix(p, "example.com/"):
			t.Errorf("a dependency beyond the standard library, uuid and api: %s", p)
		}
	}
}

// TestClientDependencies: go list -deps of the client and of api, in this
// module.
func TestClientDependencies(t *testing.T) {
	t.Parallel()
	deps := nonStandard(t, ".", "github.com/jobd/jobd/client", "github.com/jobd/jobd/api")
	if len(deps) < 3 {
		t.Fatalf("go list -deps found only %v", deps)
	}
	checkLight(t, deps)
}

// TestScratchModule builds, in a module of its own outside this
// repository, a program that uses the client, as a user's remote worker
// would: `go mod tidy` and `go build` succeed, and its packages include
// no database driver and nothing of the server.
func TestScratchModule(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/caller\n\ngo 1.26\n\n" +
			"require github.com/jobd/jobd v0.0.0\n\n" +
			"replace github.com/jobd/jobd => " + root + "\n",
		"main.go": scratchMain,
	}
	// The repository's go.sum holds every checksum the caller can need:
	// tidy then has nothing to verify over the network (CI may have none;
	// its module cache is warm) and drops what the caller does not use.
	if sum, err := os.ReadFile(filepath.Join(root, "go.sum")); err == nil {
		files["go.sum"] = string(sum)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd(t, dir, "mod", "tidy")
	goCmd(t, dir, "build", "-o", filepath.Join(dir, "caller"), ".")
	deps := nonStandard(t, dir, ".")
	if !strings.Contains(strings.Join(deps, " "), "github.com/jobd/jobd/client") {
		t.Fatalf("the scratch program does not build the client: %v", deps)
	}
	checkLight(t, deps)
	// Its go.mod requires jobd and uuid only. (Its go.sum also lists the
	// drivers: go mod tidy records the checksums of what the client's own
	// tests import, which serve a real jobd; the build never reads them.)
	var mod struct{ Require []struct{ Path string } }
	if err := json.Unmarshal(goCmd(t, dir, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatal(err)
	}
	for _, r := range mod.Require {
		if r.Path != "github.com/jobd/jobd" && r.Path != "github.com/google/uuid" {
			t.Errorf("go mod tidy made the caller require %s", r.Path)
		}
	}
}

// scratchMain is a remote worker and a caller, in one program.
const scratchMain = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

func main() {
	c, err := client.New("http://127.0.0.1:8080", os.Getenv("JOBD_KEY"))
	if err != nil {
		panic(err)
	}
	if len(os.Args) > 1 {
		j, _, err := c.Submit(context.Background(), api.SubmitRequest{Kind: "noop", Args: json.RawMessage(os.Args[1])})
		fmt.Println(j, err, client.IsRetryable(err))
		return
	}
	w := client.NewWorker(c, client.WorkerConfig{Queues: []string{"default"}})
	client.Handle(w, "echo", func(ctx context.Context, t *client.Task[json.RawMessage]) (json.RawMessage, error) {
		return t.Args, nil
	})
	fmt.Println(w.Run(context.Background()))
}
`
