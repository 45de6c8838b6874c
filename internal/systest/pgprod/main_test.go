package pgprod

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jobd/jobd/internal/testutil/pgtest"
)

func TestMain(m *testing.M) {
	pgtest.MainThen(m, func() {
		if buildDir != "" {
			_ = os.RemoveAll(buildDir)
		}
	})
}

// long: JOBD_PGPROD_LONG asks for the longer runs.
var long = os.Getenv("JOBD_PGPROD_LONG") != ""

var (
	buildOnce sync.Once
	jobdBin   string
	buildErr  error
	buildDir  string
)

// jobd returns the path of a jobd binary built once for the package's
// tests, with -race when they run with it (reusing the packages the race
// build of the tests compiled).
func jobd(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := filepath.Abs(filepath.Join("..", "..", ".."))
		if err != nil {
			buildErr = err
			return
		}
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		if buildDir, err = os.MkdirTemp("", "jobd-pgprod-"); err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(buildDir, "jobd")
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command(goBin, append(args, "./cmd/jobd")...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err: err, out: out}
			return
		}
		jobdBin = bin
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/jobd: %v", buildErr)
	}
	return jobdBin
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }
