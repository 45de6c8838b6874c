package job

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// WorkflowParams describes a workflow to submit: its tasks, each a job
// submission with a ref and the refs it depends on.
type WorkflowParams struct {
	// Name names the workflow (the kind of work it does: "transcode");
	// required, a name as CheckName allows.
	Name string
	// IdempotencyKey, when set, names the workflow for as long as it is
	// retained: a submission of the same key and request returns it
	// instead of a new one, and one of another request is refused
	// (ErrIdempotencyMismatch).
	IdempotencyKey string
	// IdempotencyFingerprint identifies the request, for the key's rule;
	// Normalize sets it, when a key is given and it is empty, to
	// WorkflowFingerprint.
	IdempotencyFingerprint string
	// Tasks are the workflow's tasks, at least one.
	Tasks []TaskParams
}

// TaskParams is one task of a workflow: a job submission (every member a
// job has; its idempotency key and unique rule must be empty: the
// workflow's idempotency key covers its tasks) with its ref and its
// dependencies.
type TaskParams struct {
	// Ref names the task in its workflow: unique there, required, a name
	// as CheckName allows.
	Ref string
	// DependsOn are the refs of the tasks it depends on; none: it is
	// queued at once.
	DependsOn []string
	// RunOn says when it runs; "" is RunOnSuccess.
	RunOn RunOn
	InsertParams
}

// Normalize validates p, fills in its defaults (each task's, by
// InsertParams.Normalize with maxArgs) and returns its tasks' indexes in
// an order where every task comes after its dependencies (Kahn's
// algorithm: the order a store inserts them in). maxTasks <= 0 means DefaultWorkflowMaxTasks. Refs must be
// unique, dependencies must name refs of the workflow, once each, and
// form no cycle. Every error is a *ValidationError naming the field of
// the task at fault ("tasks[3].depends_on"); Normalize writes nothing,
// and a store calls it before it touches the database.
func (p *WorkflowParams) Normalize(maxArgs, maxTasks int) (order []int, err error) {
	if maxTasks <= 0 {
		maxTasks = DefaultWorkflowMaxTasks
	}
	if p.Name == "" {
		return nil, Invalid("name", "is required")
	}
	if err := CheckName("name", p.Name); err != nil {
		return nil, err
	}
	for field, v := range map[string]string{"idempotency_key": p.IdempotencyKey, "idempotency_fingerprint": p.IdempotencyFingerprint} {
		if len(v) > MaxKeyBytes || CheckText(field, v) != nil {
			return nil, Invalid(field, "must be valid UTF-8 of at most %d bytes, without NUL", MaxKeyBytes)
		}
	}
	switch n := len(p.Tasks); {
	case n == 0:
		return nil, Invalid("tasks", "must hold at least one task")
	case n > maxTasks:
		return nil, Invalid(taskField(maxTasks, ""), "is task %d of %d, over the limit of %d tasks a workflow may hold", maxTasks+1, n, maxTasks)
	}
	byRef := make(map[string]int, len(p.Tasks))
	for i := range p.Tasks {
		if err := p.Tasks[i].normalize(i, maxArgs, byRef); err != nil {
			return nil, err
		}
	}
	for i := range p.Tasks {
		if err := p.Tasks[i].checkDependencies(i, byRef); err != nil {
			return nil, err
		}
	}
	if order, err = topoOrder(p.Tasks, byRef); err != nil {
		return nil, err
	}
	if p.IdempotencyKey != "" && p.IdempotencyFingerprint == "" {
		if p.IdempotencyFingerprint, err = WorkflowFingerprint(p); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// taskField names a field of the task at index i ("" for the task
// itself).
func taskField(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("tasks[%d]", i)
	}
	return fmt.Sprintf("tasks[%d].%s", i, field)
}

// inTask makes err, a *ValidationError of a job submission's field, name
// that field of the task at index i.
func inTask(i int, err error) error {
	if ve, ok := err.(*ValidationError); ok {
		return &ValidationError{Field: taskField(i, ve.Field), Reason: ve.Reason}
	}
	return fmt.Errorf("%s: %w", taskField(i, ""), err)
}

// normalize checks the task at index i but its dependencies (which need
// every ref: checkDependencies), fills its defaults and adds its ref to
// byRef.
func (t *TaskParams) normalize(i, maxArgs int, byRef map[string]int) error {
	if t.Ref == "" {
		return Invalid(taskField(i, "ref"), "is required")
	}
	if err := CheckName(taskField(i, "ref"), t.Ref); err != nil {
		return err
	}
	if j, dup := byRef[t.Ref]; dup {
		return Invalid(taskField(i, "ref"), "%q is the ref of tasks[%d] too: refs are unique in a workflow", t.Ref, j)
	}
	byRef[t.Ref] = i
	switch t.RunOn {
	case "":
		t.RunOn = RunOnSuccess
	case RunOnSuccess, RunOnAny:
	default:
		return Invalid(taskField(i, "run_on"), "must be %q or %q, got %q", RunOnSuccess, RunOnAny, t.RunOn)
	}
	if t.IdempotencyKey != "" {
		return Invalid(taskField(i, "idempotency_key"), "must be empty: a task is deduplicated with its workflow, by the workflow's idempotency_key")
	}
	if t.Unique != UniqueNone {
		return Invalid(taskField(i, "unique"), "must be empty: a task is deduplicated with its workflow, by the workflow's idempotency_key")
	}
	if _, err := t.InsertParams.Normalize(maxArgs); err != nil {
		return inTask(i, err)
	}
	return nil
}

// checkDependencies checks that the task at index i depends on refs of
// the workflow, once each, and not on itself.
func (t *TaskParams) checkDependencies(i int, byRef map[string]int) error {
	seen := make(map[string]bool, len(t.DependsOn))
	for _, ref := range t.DependsOn {
		j, ok := byRef[ref]
		switch {
		case !ok:
			return Invalid(taskField(i, "depends_on"), "names %q, which is the ref of no task of the workflow", ref)
		case j == i:
			return Invalid(taskField(i, "depends_on"), "names the task itself (%q): a cycle", ref)
		case seen[ref]:
			return Invalid(taskField(i, "depends_on"), "names %q twice", ref)
		}
		seen[ref] = true
	}
	return nil
}

// topoOrder orders the tasks so that each comes after its dependencies
// (Kahn's algorithm, taking ready tasks in submission order), or names a
// task on a cycle.
func topoOrder(tasks []TaskParams, byRef map[string]int) ([]int, error) {
	pending := make([]int, len(tasks))
	dependents := make([][]int, len(tasks))
	for i, t := range tasks {
		pending[i] = len(t.DependsOn)
		for _, ref := range t.DependsOn {
			dependents[byRef[ref]] = append(dependents[byRef[ref]], i)
		}
	}
	order := make([]int, 0, len(tasks))
	for i := range tasks {
		if pending[i] == 0 {
			order = append(order, i)
		}
	}
	for next := 0; next < len(order); next++ {
		for _, d := range dependents[order[next]] {
			if pending[d]--; pending[d] == 0 {
				order = append(order, d)
			}
		}
	}
	if len(order) == len(tasks) {
		return order, nil
	}
	return nil, cycleError(tasks, byRef, pending)
}

// cycleError names a cycle among the tasks Kahn's algorithm left
// (pending > 0): following, from any of them, a dependency that is left
// too reaches a task twice, and the path between is a cycle.
func cycleError(tasks []TaskParams, byRef map[string]int, pending []int) error {
	at := slices.IndexFunc(pending, func(n int) bool { return n > 0 })
	seen := map[int]int{} // task -> its position on the path
	var path []int
	for {
		if pos, ok := seen[at]; ok {
			path = path[pos:]
			break
		}
		seen[at] = len(path)
		path = append(path, at)
		for _, ref := range tasks[at].DependsOn {
			if d := byRef[ref]; pending[d] > 0 {
				at = d
				break
			}
		}
	}
	first := slices.Min(path)
	for len(path) > 0 && path[0] != first {
		path = append(path[1:], path[0])
	}
	refs := make([]string, 0, len(path)+1)
	for _, i := range append(path, path[0]) {
		refs = append(refs, fmt.Sprintf("%q", tasks[i].Ref))
	}
	return Invalid(taskField(first, "depends_on"), "makes a cycle: %s (each depends on the next)", strings.Join(refs, " → "))
}

// WorkflowFingerprint is the fingerprint of the request p describes, for
// its idempotency key's rule, as Fingerprint is a job's: the hex SHA-256
// of the canonical JSON of the workflow's name and its tasks, by ref,
// each with its dependencies (sorted), its run_on and its job's
// Fingerprint. The order of the tasks and of each task's dependencies
// does not matter. p must be normalised.
func WorkflowFingerprint(p *WorkflowParams) (string, error) {
	tasks := make(map[string]any, len(p.Tasks))
	for i := range p.Tasks {
		t := &p.Tasks[i]
		fp, err := Fingerprint(&t.InsertParams)
		if err != nil {
			return "", err
		}
		deps := slices.Clone(t.DependsOn)
		slices.Sort(deps)
		tasks[t.Ref] = map[string]any{"depends_on": stringsAny(deps), "run_on": string(t.RunOn), "job": fp}
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, map[string]any{"name": p.Name, "tasks": tasks}); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// CheckCallerWorkflow is CheckCallerInsert for each task of a workflow a
// caller submits; the error names the task's field ("tasks[2].queue").
func CheckCallerWorkflow(p *WorkflowParams) error {
	for i := range p.Tasks {
		if err := CheckCallerInsert(&p.Tasks[i].InsertParams); err != nil {
			return inTask(i, err)
		}
	}
	return nil
}
