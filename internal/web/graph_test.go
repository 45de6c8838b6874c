package web

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// tasksOf makes tasks named refs (in id order) and the edges deps
// gives (a ref to the refs it depends on).
func tasksOf(refs []string, deps map[string][]string) ([]*job.Job, []store.Edge) {
	ids := map[string]uuid.UUID{}
	var tasks []*job.Job
	for _, r := range refs {
		id := uuid.Must(uuid.NewV7())
		ids[r] = id
		tasks = append(tasks, &job.Job{ID: id, Ref: r, State: job.StateWaiting})
	}
	var edges []store.Edge
	for _, r := range refs {
		for _, d := range deps[r] {
			edges = append(edges, store.Edge{Task: ids[r], DependsOn: ids[d]})
		}
	}
	return tasks, edges
}

// TestLayoutGraph: a task's column is the longest path to it from a
// root, not the shortest; rows follow the dependencies' rows; every
// edge is drawn from its dependency's right edge to its dependent's
// left edge; past the cap, the first tasks are drawn and the rest
// counted.
func TestLayoutGraph(t *testing.T) {
	// a → b → c, and a → c directly; a → d; c, d → e.
	tasks, edges := tasksOf([]string{"a", "b", "d", "c", "e"}, map[string][]string{
		"b": {"a"}, "c": {"b", "a"}, "d": {"a"}, "e": {"c", "d"},
	})
	g := layoutGraph(tasks, edges, 500)
	want := map[string]int{"a": 0, "b": 1, "d": 1, "c": 2, "e": 3}
	for _, n := range g.Nodes {
		if n.Column != want[n.Ref] {
			t.Errorf("%s: column %d, want %d", n.Ref, n.Column, want[n.Ref])
		}
		if n.X != graphMargin+n.Column*columnStep || n.Y != graphMargin+n.Row*rowStep {
			t.Errorf("%s: at %d,%d for column %d row %d", n.Ref, n.X, n.Y, n.Column, n.Row)
		}
	}
	if g.Columns != 4 || len(g.Edges) != 6 || g.Hidden != 0 {
		t.Fatalf("columns %d, edges %d, hidden %d; want 4, 6, 0", g.Columns, len(g.Edges), g.Hidden)
	}
	if g.Width != 2*graphMargin+3*columnStep+nodeWidth || g.Height != 2*graphMargin+rowStep+nodeHeight {
		t.Errorf("size %dx%d", g.Width, g.Height)
	}
	for _, e := range g.Edges {
		if !strings.HasPrefix(e.Path, "M") || !strings.Contains(e.Path, " C") {
			t.Errorf("edge path %q", e.Path)
		}
	}

	// A fan-out of 600 and its fan-in: the root and 499 of the fan-out
	// drawn, 101 tasks counted; only edges between drawn tasks.
	refs := []string{"root"}
	deps := map[string][]string{}
	for i := 0; i < 600; i++ {
		r := "leaf-" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + uuid.NewString()[:4]
		refs = append(refs, r)
		deps[r] = []string{"root"}
		deps["fan-in"] = append(deps["fan-in"], r)
	}
	refs = append(refs, "fan-in")
	tasks, edges = tasksOf(refs, deps)
	g = layoutGraph(tasks, edges, 500)
	if len(g.Nodes) != 500 || g.Hidden != 102 || len(g.Edges) != 499 || g.Columns != 2 {
		t.Fatalf("capped: %d nodes, %d hidden, %d edges, %d columns; want 500, 102, 499, 2", len(g.Nodes), g.Hidden, len(g.Edges), g.Columns)
	}
	for _, n := range g.Nodes {
		if len(n.Label) > refShown+len("…") {
			t.Errorf("label %q longer than %d bytes", n.Label, refShown)
		}
	}
}

// TestPollPeriod: 2 s up to a thousand tasks, 2 s more a thousand.
func TestPollPeriod(t *testing.T) {
	for tasks, want := range map[int]time.Duration{1: 2 * time.Second, 1000: 2 * time.Second, 1001: 4 * time.Second, 10000: 20 * time.Second} {
		if got := pollPeriod(tasks); got != want {
			t.Errorf("pollPeriod(%d) = %s, want %s", tasks, got, want)
		}
	}
}

// TestDepthsCycle: a cycle, which no workflow has, ends the walk
// instead of looping.
func TestDepthsCycle(t *testing.T) {
	if got := depths([][]int{{1}, {0}, nil}); len(got) != 3 {
		t.Fatalf("depths: %v", got)
	}
}
