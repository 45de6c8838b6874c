package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// maxLimitedScan bounds the store pages one listing of a key limited to
// queues reads to fill its page (limitedWorkflows): a page may then come
// shorter than asked for, with a next_cursor, never longer to answer.
const maxLimitedScan = 10

// listWorkflows: GET /api/v1/workflows[?name=&state=&cursor=&limit=]:
// newest first, filtered by name and states (state repeated or
// comma-separated), paged by cursor (next_cursor) and limit (default 50,
// at most 200; 0 only counts). X-Total-Count and total count the matches,
// except for a key limited to queues: it sees only the workflows whose
// every task is in its queues, found by reading each, and its total is
// -1 (not counted).
func (s *server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "name", "state", "cursor", "limit")
	if err != nil {
		return err
	}
	p, err := workflowListParams(q.Get("name"), q["state"], q.Get("cursor"), q.Get("limit"))
	if err != nil {
		return err
	}
	var out api.WorkflowList
	if callerOf(r).Limited() {
		out, err = s.limitedWorkflows(r, p)
	} else {
		out, err = s.allWorkflows(r, p)
	}
	if err != nil {
		return err
	}
	w.Header().Set("X-Total-Count", strconv.FormatInt(out.Total, 10))
	return writeJSON(w, http.StatusOK, out)
}

// allWorkflows is one page of every matching workflow.
func (s *server) allWorkflows(r *http.Request, p store.WorkflowListParams) (api.WorkflowList, error) {
	limit := p.Limit
	if limit > 0 {
		p.Limit++ // one more tells whether a next page exists
	}
	res, err := s.store.WorkflowList(r.Context(), p)
	if err != nil {
		return api.WorkflowList{}, err
	}
	out := api.WorkflowList{Workflows: make([]api.Workflow, 0, min(len(res.Workflows), limit)), Total: res.Total}
	for i, wf := range res.Workflows {
		if i == limit {
			out.NextCursor = encodeCursor(false, store.Cursor{ID: res.Workflows[i-1].ID})
			break
		}
		out.Workflows = append(out.Workflows, toAPIWorkflow(wf))
	}
	return out, nil
}

// limitedWorkflows is one page of the matching workflows a key limited
// to queues may see (allowsWorkflow), read a store page at a time, each
// workflow's tasks read to check their queues; at most maxLimitedScan
// store pages, after which the page ends short with a next_cursor.
func (s *server) limitedWorkflows(r *http.Request, p store.WorkflowListParams) (api.WorkflowList, error) {
	out := api.WorkflowList{Workflows: []api.Workflow{}, Total: -1}
	limit := p.Limit
	p.NoTotal = true
	for scan := 0; limit > 0 && scan < maxLimitedScan; scan++ {
		res, err := s.store.WorkflowList(r.Context(), p)
		if err != nil {
			return out, err
		}
		for _, wf := range res.Workflows {
			if len(out.Workflows) == limit {
				return out, nil // one more exists: NextCursor is set
			}
			d, err := s.store.WorkflowGet(r.Context(), wf.ID)
			if err != nil && !errors.Is(err, job.ErrNotFound) {
				return out, err
			}
			if err == nil && allowsWorkflow(callerOf(r), d) {
				out.Workflows = append(out.Workflows, toAPIWorkflow(wf))
			}
			id := wf.ID
			p.After = &id
			out.NextCursor = encodeCursor(false, store.Cursor{ID: id})
		}
		if len(res.Workflows) < p.Limit {
			out.NextCursor = "" // the last page
			break
		}
	}
	return out, nil
}

// workflowListParams reads the filters of GET /api/v1/workflows.
func workflowListParams(name string, states []string, cursor, limit string) (store.WorkflowListParams, error) {
	p := store.WorkflowListParams{Name: name, Limit: defaultLimit}
	if !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return p, badRequest("name", "name must be valid UTF-8 without NUL characters")
	}
	for _, v := range states {
		for _, s := range strings.Split(v, ",") {
			st := job.WorkflowState(strings.TrimSpace(s))
			if !st.Valid() {
				return p, badRequest("state", "unknown workflow state %q; one of running, succeeded, failed, canceled", s)
			}
			if !slices.Contains(p.States, st) {
				p.States = append(p.States, st)
			}
		}
	}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil {
			return p, badRequest("limit", "limit must be an integer from 0 to %d, got %q", maxLimit, limit)
		}
		if n < 0 || n > maxLimit {
			return p, job.Invalid("limit", "must be between 0 and %d, got %d", maxLimit, n)
		}
		p.Limit = n
	}
	if cursor != "" {
		c, err := decodeCursor(false, cursor)
		if err != nil {
			return p, err
		}
		p.After = &c.ID
	}
	return p, store.CheckWorkflowList(p)
}
