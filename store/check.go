package store

import (
	"encoding/json"
	"fmt"

	"github.com/jobd/jobd/job"
)

// The checks of input that do not depend on the dialect, written once:
// every driver calls them before it touches the database, so that bad
// input is refused the same way everywhere and never half-writes.

// CheckOutcomes refuses a batch for JobFinish when one of its outcomes
// has an unknown status or a result that is not JSON; the error names the
// outcome.
func CheckOutcomes(outcomes []Outcome) error {
	for i, o := range outcomes {
		if err := o.Outcome.Check(); err != nil {
			return fmt.Errorf("outcome %d: %w", i, err)
		}
	}
	return nil
}

// CheckProgress refuses progress whose items are not JSON.
func CheckProgress(p job.Progress) error {
	return job.CheckJSON("progress.items", p.Items)
}

// CheckCheckpoint refuses a checkpoint that is not JSON (nil clears it).
func CheckCheckpoint(checkpoint json.RawMessage) error {
	return job.CheckJSON("checkpoint", checkpoint)
}

// CheckScan refuses a ScanLimit that is negative or set on a page that
// is not newest first (the feed, oldest first).
func CheckScan(p ListParams) error {
	switch {
	case p.ScanLimit < 0:
		return job.Invalid("scan_limit", "must be >= 0, got %d", p.ScanLimit)
	case p.ScanLimit > 0 && (p.UpdatedSince != nil || p.OldestFirst):
		return job.Invalid("scan_limit", "bounds only a newest-first page, not the feed or oldest first")
	}
	return nil
}

// ScanBounded reports whether a page of p reads the bound of its scan
// (ListParams.ScanLimit): a newest-first page with a limit and filters
// that not every job matches, none of them an idempotency key.
func ScanBounded(p ListParams) bool {
	filtered := p.Queue != "" || p.QueuesIn.Limited() || p.Kind != "" || len(p.States) > 0 || p.LockKey != "" || p.PartitionKey != ""
	return p.ScanLimit > 0 && p.Limit > 0 && filtered && p.IdempotencyKey == ""
}

// CheckKey refuses an API key record without its id, prefix or hash, or
// with queues that job.ParseQueuePatterns refuses.
func CheckKey(key APIKey) error {
	if key.ID == "" || key.Prefix == "" || len(key.Hash) == 0 {
		return job.Invalid("api_key", "id, prefix and hash are required")
	}
	_, err := job.ParseQueuePatterns("queues", key.Queues)
	return err
}

// CheckWorker refuses a worker record without its id, or with queues
// that job.ParseQueuePatterns refuses.
func CheckWorker(w Worker) error {
	if w.ID == "" {
		return job.Invalid("worker", "id is required")
	}
	_, err := job.ParseQueuePatterns("queues", w.Queues)
	return err
}

// CheckTaskResult refuses a process task result that no store can apply:
// no process named, an unknown status, a document or an event that is
// not JSON.
func CheckTaskResult(r ProcessTaskResult) error {
	if r.Namespace == "" || r.ID == "" {
		return job.Invalid("process", "namespace and id are required")
	}
	if r.Status != ProcessRunning && r.Status != ProcessError && !r.Remove {
		return job.Invalid("status", "unknown process status %q", r.Status)
	}
	for _, doc := range []struct {
		field string
		raw   json.RawMessage
	}{{"outcome", r.Outcome}, {"aux_state", r.AuxState}, {"metadata", r.Metadata}} {
		if err := job.CheckJSON(doc.field, doc.raw); err != nil {
			return err
		}
	}
	for i, e := range r.Events {
		if !json.Valid(e) {
			return job.Invalid("events", "event %d must be JSON", i)
		}
	}
	return nil
}

// CheckWebhook refuses a subscription without its id, URL, events or
// secret, or with text no store keeps (NUL, invalid UTF-8). What makes a
// URL or an event valid is package webhook's to say.
func CheckWebhook(w Webhook, create bool) error {
	if w.ID == "" || w.URL == "" || len(w.Events) == 0 || (create && w.Secret == "") {
		return job.Invalid("webhook", "id, url, events and secret are required")
	}
	for field, v := range map[string]string{"id": w.ID, "url": w.URL, "secret": w.Secret, "filter.queue": w.Queue, "filter.kind": w.Kind} {
		if err := job.CheckText(field, v); err != nil {
			return err
		}
	}
	for _, e := range w.Events {
		if err := job.CheckText("events", e); err != nil {
			return err
		}
	}
	return nil
}

// CheckTwin holds an insert p that a dedupe index skipped to the job j
// the driver found in its place, whose stored idempotency fingerprint is
// fingerprint ("" for none: a job stored before fingerprints were kept
// matches any request). When j holds p's idempotency key (not an active
// twin found by its args hash) and was made by another request, the
// insert fails with job.ErrIdempotencyMismatch, which says nothing of j.
func CheckTwin(p *job.InsertParams, j *job.Job, fingerprint string) error {
	if p.IdempotencyKey == "" || j.IdempotencyKey != p.IdempotencyKey ||
		fingerprint == "" || fingerprint == p.IdempotencyFingerprint {
		return nil
	}
	return job.ErrIdempotencyMismatch
}
