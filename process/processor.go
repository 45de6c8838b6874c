// Package process runs durable processes (progressor-style state machines)
// on the job engine: every task of a process (init, call, repair, timeout,
// remove) is a job whose lock_key is the process, so the engine's per-key
// serialisation runs one task at a time per process on every node, in
// claim order (priority, run_at, id). The processor, the user's code, is
// called with one task at a time and answers with events, a new aux state,
// a response and an action; the store saves them in one transaction fenced
// by the task's lease (store.Store.ProcessTaskFinish).
package process

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Task names what a processor is asked to do.
type Task string

// The tasks of a process.
const (
	TaskInit    Task = "init"
	TaskCall    Task = "call"
	TaskRepair  Task = "repair"
	TaskTimeout Task = "timeout"
	// TaskRemove is a timer that removes the process when it falls due;
	// it does not call the processor.
	TaskRemove Task = "remove"
)

// Request is what a processor receives.
type Request struct {
	Task    Task            `json:"task"`
	Args    json.RawMessage `json:"args,omitempty"`
	Process State           `json:"process"`
}

// State is a process as a processor sees it.
type State struct {
	Namespace string          `json:"namespace"`
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	AuxState  json.RawMessage `json:"aux_state,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	History   []Event         `json:"history"`
}

// Event is one event of a process's history.
type Event struct {
	EventID   int64           `json:"event_id"`
	Timestamp time.Time       `json:"timestamp"`
	Payload   json.RawMessage `json:"payload"`
}

// Response is what a processor answers.
type Response struct {
	Events   []json.RawMessage `json:"events,omitempty"`
	AuxState json.RawMessage   `json:"aux_state,omitempty"`
	Metadata json.RawMessage   `json:"metadata,omitempty"`
	Response json.RawMessage   `json:"response,omitempty"`
	Action   *Action           `json:"action,omitempty"`
}

// Action is what a processor asks of jobd besides saving its answer.
type Action struct {
	// SetTimer (an instant) or Timeout (seconds from now) sets the timer,
	// replacing the pending one.
	SetTimer *time.Time `json:"set_timer,omitempty"`
	Timeout  *float64   `json:"timeout,omitempty"`
	// UnsetTimer cancels the pending timer.
	UnsetTimer bool `json:"unset_timer,omitempty"`
	// Remove deletes the process: at once, or when the timer that
	// SetTimer or Timeout sets falls due.
	Remove bool `json:"remove,omitempty"`
}

// Processor handles one task of a process.
type Processor interface {
	Process(ctx context.Context, req *Request) (*Response, error)
}

// ProcessorFunc adapts a function to Processor (embedded use).
type ProcessorFunc func(ctx context.Context, req *Request) (*Response, error)

// Process calls f.
func (f ProcessorFunc) Process(ctx context.Context, req *Request) (*Response, error) {
	return f(ctx, req)
}

// HTTPProcessor POSTs each task as JSON to URL and reads the answer.
type HTTPProcessor struct {
	URL    string
	Client *http.Client // nil: http.DefaultClient
}

// maxAnswer caps a processor's answer.
const maxAnswer = 16 << 20

// Process posts req to the processor. A non-2xx status or an answer that
// is not a Response is an error.
func (h *HTTPProcessor) Process(ctx context.Context, req *Request) (*Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("processor request: %w", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("processor: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("processor: read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("processor answered %s: %s", resp.Status, bytes.TrimSpace(raw[:min(len(raw), 512)]))
	}
	var out Response
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("processor: bad answer: %w", err)
	}
	return &out, nil
}
