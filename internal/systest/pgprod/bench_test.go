package pgprod

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
)

// TestBenchNodes runs `jobd bench --mode nodes` with one node and a small
// backlog: the mode starts its `jobd serve` node, works the backlog of
// each variant through it, and reports its figures, each of them
// measured (above zero where the node did work).
func TestBenchNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("the production PostgreSQL tier (real jobd serve nodes) runs without -short")
	}
	t.Parallel()
	db := migrated.NewDatabase(t)
	cmd := exec.Command(jobd(t), "bench", "--database", db, "--mode", "nodes", "--nodes", "1", "--jobs", "200", "--json")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JOBD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("jobd bench --mode nodes: %v\n%s", err, stderr.String())
	}
	var figs map[string]float64
	if err := json.Unmarshal(stdout.Bytes(), &figs); err != nil {
		t.Fatalf("figures: %v: %s", err, stdout.String())
	}
	for _, v := range []string{"sleep10ms", "noop"} {
		for _, f := range []string{"jobs_per_s.min", "jobs_per_s.median", "jobs_per_s.max", "ideal_linear", "claims_per_100_jobs", "connections_per_node"} {
			name := "nodes." + v + ".n1." + f
			if got, ok := figs[name]; !ok || got <= 0 {
				t.Errorf("%s = %v (reported: %t), want a measured figure above 0", name, got, ok)
			}
		}
	}
	if got := figs["nodes.sleep10ms.n1.ideal_pools"]; got != 1000 {
		t.Errorf("nodes.sleep10ms.n1.ideal_pools = %v, want 1000 (10 workers, 10 ms jobs)", got)
	}
	t.Logf("figures: %v", figs)
}
