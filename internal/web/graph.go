package web

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The workflow page's graph: tasks as nodes, laid out in columns by
// depth (a task's column is the longest path to it from a task without
// dependencies), dependencies as arrows from left to right. It is drawn
// on the server as an SVG by the workflow template (no script, no
// library), each node a link to its task's page and coloured by its
// state through the style sheet (class "s-<state>"): the page's script
// changes only those classes as the tasks move.

// Geometry of the graph, in SVG user units (CSS pixels).
const (
	graphMaxNodes = 500 // the tasks drawn at most
	nodeWidth     = 150
	nodeHeight    = 34
	columnStep    = 200 // from one column's left edge to the next's
	rowStep       = 46
	graphMargin   = 10
	// refShown is how much of a ref a node writes (its title has all).
	refShown = 18
)

// graphNode is a task drawn.
type graphNode struct {
	ID    uuid.UUID
	Ref   string
	Label string
	State job.State
	// Column and Row place it; X and Y are its top left corner.
	Column, Row int
	X, Y        int
}

// graphEdge is an arrow from a dependency's node to its dependent's:
// Path is its SVG path (a cubic curve from the right edge of one to the
// left edge of the other).
type graphEdge struct {
	From, To uuid.UUID
	Path     string
}

// graph is a workflow's drawing.
type graph struct {
	Nodes         []graphNode
	Edges         []graphEdge
	Width, Height int
	// Hidden counts the tasks not drawn (past graphMaxNodes).
	Hidden int
	// Columns counts the columns, the workflow's depth plus one.
	Columns int
	// NodeWidth and NodeHeight are every node's size.
	NodeWidth, NodeHeight int
}

// layoutGraph lays out the first limit tasks of a workflow (in id order,
// in which each task comes after its dependencies, so that the tasks
// drawn are the ones nearest the roots) and the edges between them.
// Within a column a node sits by the mean row of its dependencies
// (one barycentre pass), which keeps fan-outs and fan-ins straight.
func layoutGraph(tasks []*job.Job, edges []store.Edge, limit int) graph {
	g := graph{NodeWidth: nodeWidth, NodeHeight: nodeHeight}
	if len(tasks) > limit {
		g.Hidden = len(tasks) - limit
		tasks = tasks[:limit]
	}
	index := make(map[uuid.UUID]int, len(tasks))
	for i, t := range tasks {
		index[t.ID] = i
	}
	deps := make([][]int, len(tasks))
	for _, e := range edges {
		to, ok1 := index[e.Task]
		from, ok2 := index[e.DependsOn]
		if ok1 && ok2 {
			deps[to] = append(deps[to], from)
		}
	}
	column := depths(deps)
	// Columns, then rows within each by the dependencies' mean row.
	byColumn := map[int][]int{}
	for i, c := range column {
		byColumn[c] = append(byColumn[c], i)
		g.Columns = max(g.Columns, c+1)
	}
	row := make([]float64, len(tasks))
	rows := 0
	for c := 0; c < g.Columns; c++ {
		members := byColumn[c]
		key := make(map[int]float64, len(members))
		for _, i := range members {
			key[i] = float64(i) // a root keeps the order of the ids
			if len(deps[i]) > 0 {
				sum := 0.0
				for _, d := range deps[i] {
					sum += row[d]
				}
				key[i] = sum / float64(len(deps[i]))
			}
		}
		slices.SortStableFunc(members, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
		for r, i := range members {
			row[i] = float64(r)
		}
		rows = max(rows, len(members))
	}
	g.Nodes = make([]graphNode, len(tasks))
	for i, t := range tasks {
		r := int(row[i])
		g.Nodes[i] = graphNode{
			ID: t.ID, Ref: t.Ref, Label: short(t.Ref, refShown), State: t.State,
			Column: column[i], Row: r,
			X: graphMargin + column[i]*columnStep, Y: graphMargin + r*rowStep,
		}
	}
	for to, ds := range deps {
		for _, from := range ds {
			a, b := g.Nodes[from], g.Nodes[to]
			x1, y1 := a.X+nodeWidth, a.Y+nodeHeight/2
			x2, y2 := b.X-2, b.Y+nodeHeight/2 // the arrow's tip at the edge
			bend := (x2 - x1) / 2
			g.Edges = append(g.Edges, graphEdge{From: a.ID, To: b.ID,
				Path: fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1+bend, y1, x2-bend, y2, x2, y2)})
		}
	}
	g.Width = 2*graphMargin + max(g.Columns-1, 0)*columnStep + nodeWidth
	g.Height = 2*graphMargin + max(rows-1, 0)*rowStep + nodeHeight
	return g
}

// depths is each node's column: the longest path to it from a node
// without dependencies (deps[i] are i's dependencies). The store's
// order puts dependencies first, but depths does not rely on it; a
// cycle, which a workflow cannot have, would leave its nodes at 0.
func depths(deps [][]int) []int {
	n := len(deps)
	depth := make([]int, n)
	children := make([][]int, n)
	missing := make([]int, n)
	for i, ds := range deps {
		missing[i] = len(ds)
		for _, d := range ds {
			children[d] = append(children[d], i)
		}
	}
	ready := make([]int, 0, n)
	for i := range deps {
		if missing[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		for _, c := range children[i] {
			depth[c] = max(depth[c], depth[i]+1)
			if missing[c]--; missing[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	return depth
}
