package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/store/sqlite"
)

// TestServeGatewayThrottlesByUpstream: jobd serve with an upstream makes
// the gateway queue throttle by partition_key (the upstream) at start,
// keeping the limits set on it, and says so in its log.
func TestServeGatewayThrottlesByUpstream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobd.db")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.QueueSetLimits(ctx, gateway.Queue, flow.Limits{PartitionLimit: 3}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	stderr := &lockedBuffer{}
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: stderr, Getenv: func(string) string { return "" }}
	testsignal.Of(&env.points.listening).Init()
	sctx, cancel := context.WithCancel(ctx)
	exit := make(chan int, 1)
	go func() {
		exit <- Main(sctx, []string{"serve", "--database", "sqlite:" + path, "--listen", "127.0.0.1:0",
			"--upstream", "reports=http://127.0.0.1:9"}, env)
	}()
	testsignal.Of(&env.points.listening).Wait(t, "serve to listen")
	cancel()
	if code := <-exit; code != 0 {
		t.Fatalf("serve exited %d: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "throttle_by=partition_key") {
		t.Errorf("serve's log does not say it set the gateway queue's throttle_by:\n%s", stderr)
	}

	st, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := st.QueueSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := flow.Limits{PartitionLimit: 3, ThrottleBy: flow.ByPartitionKey}
	for _, q := range all {
		if q.Name == gateway.Queue {
			if q.Limits.String() != want.String() {
				t.Fatalf("gateway queue limits %s, want %s", q.Limits, want)
			}
			return
		}
	}
	t.Fatalf("no settings for the gateway queue: %+v", all)
}
