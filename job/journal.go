package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// A job's events journal lives in its row. Its three common entries are
// implied by columns the transitions write anyway, and never stored:
//
//   - "queued" by created_at (attempt 0), always the first entry, or
//     "waiting" for a workflow task submitted with dependencies (it waited
//     for them first);
//   - the current attempt's "claimed" by attempted_at (with the row's
//     attempt, and lease_owner as its detail), while attempted_at is set;
//   - a success's "succeeded" by state succeeded and finished_at (with
//     the row's attempt).
//
// Every other entry is stored, in order, in the row's journal column (a
// JSON array that MarshalJournal writes and ParseJournal reads), and the
// implied ones render around the stored ones (Journal). So an insert, a
// claim and a success, the hot path, write no journal at all. Every other
// transition is decided in Go (transition.go): before it appends its own
// entry it stores the implied entries that would otherwise render in the
// wrong place, after it (the current claim) or not at all (the success
// of a job that leaves succeeded).

// Journal renders the journal of the job j, oldest first, from its row
// and the entries its journal column stores: "queued" at created_at
// ("waiting" for a task with dependencies), the stored entries, then the
// entries the row implies (see implied). It reads j's ID, State,
// Attempt, LeaseOwner, CreatedAt, AttemptedAt, FinishedAt and
// Dependencies only. An event's ID is its position, 1, 2, 3…
func Journal(j *Job, stored []Event) []Event {
	events := make([]Event, 0, len(stored)+3)
	first := EventQueued
	if j.Dependencies > 0 {
		first = EventWaiting
	}
	events = append(events, Event{Kind: first, At: j.CreatedAt, Attempt: 0})
	events = append(events, stored...)
	events = append(events, implied(FactsOf(j))...)
	for i := range events {
		events[i].ID = int64(i + 1)
		events[i].JobID = j.ID
	}
	return events
}

// implied returns the entries, other than "queued", that a row whose
// facts are f implies rather than stores, in journal order: the current
// claim while attempted_at is set, then the success of a succeeded job.
func implied(f Facts) []Event {
	var events []Event
	if f.AttemptedAt != nil {
		events = append(events, Event{Kind: EventClaimed, At: *f.AttemptedAt, Attempt: f.Attempt, Detail: f.LeaseOwner})
	}
	if f.State == StateSucceeded && f.FinishedAt != nil {
		events = append(events, Event{Kind: EventSucceeded, At: *f.FinishedAt, Attempt: f.Attempt})
	}
	return events
}

// storedEntry is one entry as the journal column stores it: compact, its
// time in unix microseconds (the precision of every store), its detail
// left out when empty.
type storedEntry struct {
	Kind    EventKind `json:"kind"`
	At      int64     `json:"at"`
	Attempt int       `json:"attempt"`
	Detail  string    `json:"detail,omitempty"`
}

// MarshalJournal encodes entries to append to a journal column: a JSON
// array of their kinds, times, attempts and details, or nil when there
// are none. Their IDs and JobIDs are not stored.
func MarshalJournal(events []Event) (json.RawMessage, error) {
	if len(events) == 0 {
		return nil, nil
	}
	entries := make([]storedEntry, len(events))
	for i, e := range events {
		entries[i] = storedEntry{Kind: e.Kind, At: e.At.UnixMicro(), Attempt: e.Attempt, Detail: e.Detail}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(entries); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ParseJournal decodes a journal column: the stored entries, in order,
// without IDs and JobIDs (Journal numbers them); none for NULL.
func ParseJournal(raw []byte) ([]Event, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var entries []storedEntry
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	events := make([]Event, len(entries))
	for i, e := range entries {
		events[i] = Event{Kind: e.Kind, At: time.UnixMicro(e.At).UTC(), Attempt: e.Attempt, Detail: e.Detail}
	}
	return events, nil
}
