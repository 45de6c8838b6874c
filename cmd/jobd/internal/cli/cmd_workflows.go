package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
)

var workflowsCommand = &Command{
	Name: "workflows",
	Usage: "jobd workflows submit [flags] FILE | get [--wait] ID | list [--name N] [--state S] [--limit N] | cancel ID | retry ID\n" +
		"  FILE (or - for stdin) is the body of POST /api/v1/workflows, in JSON or YAML (.yaml, .yml)\n" +
		"  every action takes --server URL --key KEY --json",
	Summary: "submit, follow, list, cancel or retry workflows: jobs that depend on jobs",
	Run:     runWorkflows,
}

func init() { commands = append(commands, workflowsCommand) }

func runWorkflows(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usageError("want an action: submit, get, list, cancel or retry")
	}
	action, args := args[0], args[1:]
	fs := newFlagSet(env, "workflows "+action)
	var cf clientFlags
	cf.register(fs)
	switch action {
	case "submit":
		return submitWorkflow(ctx, env, fs, &cf, args)
	case "get":
		return getWorkflow(ctx, env, fs, &cf, args)
	case "list":
		return listWorkflows(ctx, env, fs, &cf, args)
	case "cancel", "retry":
		return workflowAction(ctx, env, fs, &cf, action, args)
	}
	return usageError("unknown action %q: want submit, get, list, cancel or retry", action)
}

func submitWorkflow(ctx context.Context, env *Env, fs *flag.FlagSet, cf *clientFlags, args []string) error {
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError("want one FILE (JSON or YAML; - for stdin)")
	}
	req, err := readWorkflowFile(env, fs.Arg(0))
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	wf, created, err := c.SubmitWorkflowRequest(ctx, req)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, wf)
	}
	what := "created"
	if !created {
		what = "existing (its idempotency key matched)"
	}
	fmt.Fprintf(env.Stdout, "workflow %s %s: %s, %d tasks\n", wf.ID, what, wf.State, wf.TaskCount)
	return nil
}

// readWorkflowFile reads a workflow's body from path (- for stdin): YAML
// when its name ends .yaml or .yml, or when it does not start with "{";
// JSON otherwise. Its members are those of the JSON body, checked
// strictly (an unknown member is refused here, as the server would).
func readWorkflowFile(env *Env, path string) (api.WorkflowRequest, error) {
	var (
		raw []byte
		err error
	)
	if path == "-" {
		raw, err = io.ReadAll(env.Stdin)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return api.WorkflowRequest{}, fmt.Errorf("read the workflow: %w", err)
	}
	ext := strings.ToLower(filepath.Ext(path))
	trimmed := bytes.TrimSpace(raw)
	if ext == ".yaml" || ext == ".yml" || (ext != ".json" && !bytes.HasPrefix(trimmed, []byte("{"))) {
		if raw, err = yamlToJSON(raw); err != nil {
			return api.WorkflowRequest{}, usageError("%s: %v", path, err)
		}
	}
	var req api.WorkflowRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return api.WorkflowRequest{}, usageError("%s: not a workflow (the body of POST /api/v1/workflows): %v", path, err)
	}
	return req, nil
}

// yamlToJSON converts a YAML document to the JSON it stands for.
func yamlToJSON(raw []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("YAML: %w", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("YAML that JSON cannot hold: %w", err)
	}
	return out, nil
}

func getWorkflow(ctx context.Context, env *Env, fs *flag.FlagSet, cf *clientFlags, args []string) error {
	wait := fs.Bool("wait", false, "follow the workflow until it is final, showing its tasks' states as they change; exit 1 unless it succeeded")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	id, err := oneID(fs)
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var wf *api.Workflow
	if *wait {
		var view workflowView
		if !cf.json {
			view = workflowView{w: env.Stdout, start: time.Now()}
		}
		wf, err = c.WaitWorkflow(ctx, id, view.update)
	} else {
		wf, err = c.GetWorkflow(ctx, id)
	}
	if err != nil {
		return err
	}
	if cf.json {
		err = printJSON(env.Stdout, wf)
	} else {
		err = printWorkflow(env.Stdout, wf)
	}
	if err != nil || !*wait || wf.State == api.WorkflowSucceeded {
		return err
	}
	return &ExitError{Code: exitJobFailed, Err: fmt.Errorf("workflow %s %s: %d failed, %d canceled", wf.ID, wf.State, wf.Failed, wf.Canceled)}
}

// oneID reads the one ID argument.
func oneID(fs *flag.FlagSet) (uuid.UUID, error) {
	if fs.NArg() != 1 {
		return uuid.Nil, usageError("want one workflow ID")
	}
	id, err := uuid.Parse(fs.Arg(0))
	if err != nil {
		return uuid.Nil, usageError("%q is not a workflow ID", fs.Arg(0))
	}
	return id, nil
}

// workflowView is get --wait's live view: a line of the workflow's
// counts at each change, and a line for each task whose state changed.
// Its zero value (--json) shows nothing.
type workflowView struct {
	w     io.Writer
	start time.Time
	last  map[string]api.State
}

func (v *workflowView) update(wf api.Workflow) {
	if v.w == nil {
		return
	}
	var counts []string
	for _, st := range []api.State{api.StateWaiting, api.StateQueued, api.StateRunning, api.StateSucceeded, api.StateFailed, api.StateCanceled} {
		if n := wf.Counts[st]; n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, st))
		}
	}
	fmt.Fprintf(v.w, "[%s] %s: %s\n", formatElapsed(time.Since(v.start)), wf.State, strings.Join(counts, ", "))
	next := make(map[string]api.State, len(wf.Tasks))
	for _, t := range wf.Tasks {
		next[t.Ref] = t.State
		if before, seen := v.last[t.Ref]; v.last != nil && (!seen || before != t.State) {
			fmt.Fprintf(v.w, "  %s %s → %s\n", t.Ref, before, t.State)
		}
	}
	v.last = next
}

// printWorkflow writes a workflow's summary and a table of its tasks.
func printWorkflow(w io.Writer, wf *api.Workflow) error {
	fmt.Fprintf(w, "workflow %s %s: %s, %d tasks (%d succeeded, %d failed, %d canceled)\n",
		wf.ID, wf.Name, wf.State, wf.TaskCount, wf.Succeeded, wf.Failed, wf.Canceled)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REF\tSTATE\tQUEUE\tKIND\tDEPENDS ON\tATTEMPT\tERROR")
	for _, t := range wf.Tasks {
		deps := strings.Join(t.DependsOn, ",")
		if deps == "" {
			deps = "-"
		}
		if t.RunOn == api.RunOnAny {
			deps += " (any)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", t.Ref, t.State, t.Queue, t.Kind, deps, t.Attempt, oneLine(t.Error))
	}
	return tw.Flush()
}

// oneLine cuts text to its first line, at most 60 characters.
func oneLine(text string) string {
	text, _, _ = strings.Cut(text, "\n")
	if r := []rune(text); len(r) > 60 {
		text = string(r[:59]) + "…"
	}
	return text
}

func listWorkflows(ctx context.Context, env *Env, fs *flag.FlagSet, cf *clientFlags, args []string) error {
	var opts client.WorkflowListOptions
	var states string
	fs.StringVar(&opts.Name, "name", "", "only workflows of this name")
	fs.StringVar(&states, "state", "", "only workflows in these states (comma-separated: running, succeeded, failed, canceled)")
	limit := fs.Int("limit", 50, "the most workflows listed, newest first")
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError("list takes no argument")
	}
	if states != "" {
		for _, s := range strings.Split(states, ",") {
			opts.States = append(opts.States, api.WorkflowState(strings.TrimSpace(s)))
		}
	}
	opts.Limit = min(max(*limit, 1), 200)
	c, err := cf.client()
	if err != nil {
		return err
	}
	list := []api.Workflow{}
	for wf, err := range c.ListWorkflows(ctx, opts) {
		if err != nil {
			return err
		}
		if len(list) == *limit {
			break
		}
		list = append(list, wf)
	}
	if cf.json {
		return printJSON(env.Stdout, api.WorkflowList{Workflows: list, Total: int64(len(list))})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tTASKS\tSUCCEEDED\tFAILED\tCANCELED\tCREATED")
	for _, wf := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", wf.ID, wf.Name, wf.State, wf.TaskCount,
			wf.Succeeded, wf.Failed, wf.Canceled, wf.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

func workflowAction(ctx context.Context, env *Env, fs *flag.FlagSet, cf *clientFlags, action string, args []string) error {
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	id, err := oneID(fs)
	if err != nil {
		return err
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var wf *api.Workflow
	if action == "cancel" {
		wf, err = c.CancelWorkflow(ctx, id)
	} else {
		wf, err = c.RetryWorkflow(ctx, id)
	}
	if errors.Is(err, client.ErrConflict) {
		return fmt.Errorf("workflow %s: nothing to %s: %w", id, action, err)
	}
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, wf)
	}
	fmt.Fprintf(env.Stdout, "workflow %s %s: %s\n", wf.ID, map[string]string{"cancel": "canceled", "retry": "retried"}[action], wf.State)
	return nil
}
