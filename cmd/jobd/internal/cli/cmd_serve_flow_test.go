package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/store"
)

// TestServeWritesConfiguredLimits: jobd serve writes the limits of the
// pools of --workers that set any at start, over what the API had set,
// and jobd queues shows them.
func TestServeWritesConfiguredLimits(t *testing.T) {
	stderr := &lockedBuffer{}
	var watched *storewatch.Store
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(string) string { return "" },
		wrapStore: func(s store.Store) store.Store {
			watched = storewatch.Wrap(s)
			return watched
		}}
	testsignal.Of(&env.points.listening).Init()
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan int, 1)
	go func() {
		exit <- Main(ctx, []string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0",
			"--admin-secret", "flow-admin-secret-16", "--workers",
			`[{"queue":"api","concurrency":2,"global_limit":5,"rate":{"limit":100,"period":"1m"}},{"queue":"default","concurrency":1}]`}, env)
	}()
	defer func() {
		cancel()
		if code := <-exit; code != 0 {
			t.Errorf("serve exited %d: %s", code, stderr)
		}
	}()
	base := "http://" + testsignal.Of(&env.points.listening).Wait(t, "serve to listen")
	want := flow.Limits{GlobalLimit: 5, Rate: &flow.Rate{Limit: 100, Period: time.Minute}}
	storewatch.Until(t, watched, "the configured limits", func() bool {
		all, err := watched.QueueSettings(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range all {
			if q.Name == "api" {
				return q.Limits.String() == want.String()
			}
		}
		return false
	})
	var stdout strings.Builder
	lenv := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: io.Discard, Getenv: func(k string) string {
		return map[string]string{"JOBD_SERVER": base, "JOBD_KEY": "flow-admin-secret-16"}[k]
	}}
	if code := Main(ctx, []string{"queues"}, lenv); code != 0 || !strings.Contains(stdout.String(), "global_limit=5 rate=100/1m") {
		t.Errorf("jobd queues: exit %d, printed %q", code, stdout.String())
	}
}

// TestServeRefusesBadLimits: a bad limit in --workers is a usage error
// naming it.
func TestServeRefusesBadLimits(t *testing.T) {
	for field, workers := range map[string]string{
		"queues[0].global_limit": `[{"queue":"a","concurrency":1,"global_limit":-1}]`,
		"queues[1].rate.period":  `[{"queue":"a","concurrency":1},{"queue":"b","concurrency":1,"rate":{"limit":1,"period":"soon"}}]`,
	} {
		stderr := &lockedBuffer{}
		env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(string) string { return "" }}
		args := []string{"serve", "--database", "sqlite:" + filepath.Join(t.TempDir(), "jobd.db"), "--listen", "127.0.0.1:0", "--workers", workers}
		if code := Main(context.Background(), args, env); code != 2 || !strings.Contains(stderr.String(), field) {
			t.Errorf("--workers %s: exit %d, want 2 naming %s (%s)", workers, code, field, stderr)
		}
	}
}
