package httpapi

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Paging of GET /api/v1/jobs.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// list: GET /api/v1/jobs. Newest first, or with updated_since the feed:
// ascending by (updated_at, id), so that a caller that pages to the end
// and comes back with its resume_cursor sees each later change once.
// X-Total-Count always carries the number of matches; limit=0 returns
// only that.
//
// A page is read from the store in parts and each job is encoded to the
// connection before the next part is read (pageWriter), so that a page
// of large jobs never sits whole in memory, nor its JSON, however slowly
// its client reads. Each part reads as a page of its own would, from
// where the one before ended: a job that changes meanwhile shows as it
// is when its part is read (in the feed, a job changed after its part
// was read may show again, later, in its new version, as it would on a
// later page).
func (s *server) list(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "queue", "kind", "state", "lock_key", "partition_key", "updated_since", "cursor", "limit")
	if err != nil {
		return err
	}
	params, err := listParams(q)
	if err != nil {
		return err
	}
	// A caller limited to queues lists their jobs only; a queue filter
	// naming another matches nothing (an empty page, total 0).
	params.QueuesIn = callerOf(r).Queues
	limit, resumed := params.Limit, params.After != nil
	feed := params.UpdatedSince != nil
	want := 0
	if limit > 0 {
		want = limit + 1 // one more tells whether a next page exists
	}
	part := params
	part.Limit = min(want, listFirstPart)
	res, err := s.store.JobList(r.Context(), part)
	if err != nil {
		return err
	}
	total := res.Total
	w.Header().Set("X-Total-Count", strconv.FormatInt(total, 10))
	pw := newPageWriter(w, s.listBuffer)
	var last *job.Job // the page's last job
	read, biggest, next := 0, 0, false
	for {
		for _, j := range res.Jobs {
			if read++; read > limit {
				next = true
				break
			}
			if err := pw.job(toAPIJob(j)); err != nil {
				return nil // the client is gone, or too slow (the write timeout)
			}
			last, biggest = j, max(biggest, jobBytes(j))
		}
		if next || len(res.Jobs) < part.Limit || read >= want {
			break
		}
		c := cursorOf(last)
		part.After, part.NoTotal = &c, true
		part.Limit = min(want-read, max(1, s.listPartBytes/biggest))
		if res, err = s.store.JobList(r.Context(), part); err != nil {
			if !pw.started {
				return err
			}
			s.log.Warn("list jobs: reading a part of a page failed; the answer is cut", "err", err)
			panic(http.ErrAbortHandler) // never a short page that looks whole
		}
	}
	var nextCursor, resumeCursor string
	if next {
		nextCursor = encodeCursor(feed, cursorOf(last))
	}
	if feed {
		// A feed has no last page: the caller comes back for later changes
		// from where this page ends (or from where it started, if empty).
		switch {
		case last != nil:
			resumeCursor = encodeCursor(feed, cursorOf(last))
		case resumed:
			resumeCursor = q.Get("cursor")
		}
	}
	_ = pw.end(nextCursor, resumeCursor, total)
	return nil
}

func cursorOf(j *job.Job) store.Cursor { return store.Cursor{ID: j.ID, UpdatedAt: j.UpdatedAt} }

// listParams reads the filters of a list request.
func listParams(q url.Values) (store.ListParams, error) {
	p := store.ListParams{
		Queue:        q.Get("queue"),
		Kind:         q.Get("kind"),
		LockKey:      q.Get("lock_key"),
		PartitionKey: q.Get("partition_key"),
		Limit:        defaultLimit,
	}
	for _, name := range []string{"queue", "kind", "lock_key", "partition_key"} {
		if v := q.Get(name); !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return p, badRequest(name, "%s must be valid UTF-8 without NUL characters", name)
		}
	}
	for _, v := range q["state"] {
		for _, name := range strings.Split(v, ",") {
			st := job.State(strings.TrimSpace(name))
			if !st.Valid() {
				return p, badRequest("state", "unknown state %q; one of queued, running, succeeded, failed, canceled", name)
			}
			if !slices.Contains(p.States, st) {
				p.States = append(p.States, st)
			}
		}
	}
	if v := q.Get("updated_since"); v != "" {
		t, err := parseTime("updated_since", v)
		if err != nil {
			return p, err
		}
		p.UpdatedSince = &t
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return p, badRequest("limit", "limit must be an integer from 0 to %d, got %q", maxLimit, v)
		}
		if n < 0 || n > maxLimit {
			return p, job.Invalid("limit", "must be between 0 and %d, got %d", maxLimit, n)
		}
		p.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		c, err := decodeCursor(p.UpdatedSince != nil, v)
		if err != nil {
			return p, err
		}
		p.After = &c
	}
	return p, nil
}

// A cursor is opaque to callers: base64url of a mode byte ('n' for the
// newest-first order, 'f' for the feed), the job id and, in the feed, its
// updated_at in Unix microseconds (the stores keep microseconds, so the
// value is exact).
const (
	cursorNewest = 'n'
	cursorFeed   = 'f'
)

func encodeCursor(feed bool, c store.Cursor) string {
	b := make([]byte, 0, 25)
	if feed {
		b = append(b, cursorFeed)
		b = append(b, c.ID[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(c.UpdatedAt.UnixMicro()))
	} else {
		b = append(b, cursorNewest)
		b = append(b, c.ID[:]...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(feed bool, v string) (store.Cursor, error) {
	bad := badRequest("cursor", "cursor is not one this server gave for this listing order")
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) < 17 {
		return store.Cursor{}, bad
	}
	var c store.Cursor
	c.ID = uuid.UUID(b[1:17])
	switch {
	case !feed && b[0] == cursorNewest && len(b) == 17:
	case feed && b[0] == cursorFeed && len(b) == 25:
		c.UpdatedAt = time.UnixMicro(int64(binary.BigEndian.Uint64(b[17:]))).UTC()
	default:
		return store.Cursor{}, bad
	}
	return c, nil
}

// parseQuery parses r's query string and rejects parameters not in
// allowed (a typo such as ?status= must not silently list everything) and
// repeats of parameters other than state.
func parseQuery(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("", "malformed query string: %v", err)
	}
	for name, vs := range q {
		if !slices.Contains(allowed, name) {
			return nil, badRequest(name, "unknown query parameter %q", name)
		}
		if len(vs) > 1 && name != "state" {
			return nil, badRequest(name, "query parameter %q given more than once", name)
		}
	}
	return q, nil
}

// checkQuery is parseQuery for handlers that only validate.
func checkQuery(r *http.Request, allowed ...string) error {
	_, err := parseQuery(r, allowed...)
	return err
}
