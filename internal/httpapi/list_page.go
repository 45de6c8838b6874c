package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
)

// The bounds of a page of GET /api/v1/jobs in memory. Its first part
// reads listFirstPart jobs; each later one as many as listPartBytes hold
// at the size of the largest job read so far (all the rest of a page of
// small jobs). With 1 MiB args, a page in flight holds about 8 jobs
// (8 MiB) and the JSON of one, whatever its limit and however slowly its
// client reads.
const (
	listFirstPart = 8
	listPartBytes = 8 << 20
	// listBuffer is how much of the answer is encoded before it starts:
	// a page that fits is answered at once, as before; a longer one goes
	// out as it is encoded.
	listBuffer = 64 << 10
	// jobOverhead is what jobBytes counts for a job's fixed fields.
	jobOverhead = 1 << 10
)

// jobBytes is about what j takes in memory, and as JSON.
func jobBytes(j *job.Job) int {
	return jobOverhead + len(j.Args) + len(j.Result) + len(j.Checkpoint) + len(j.Progress.Items) + len(j.LastError)
}

// pageWriter encodes an api.JobList a job at a time, byte for byte as
// writeJSON would encode it whole: {"jobs":[…],"next_cursor":…,
// "resume_cursor":…,"total":N} and a newline.
type pageWriter struct {
	w       http.ResponseWriter
	limit   int // the bytes encoded before they are sent
	buf     bytes.Buffer
	enc     *json.Encoder
	jobs    int
	started bool // the status and headers are sent
}

func newPageWriter(w http.ResponseWriter, limit int) *pageWriter {
	p := &pageWriter{w: w, limit: limit}
	p.enc = json.NewEncoder(&p.buf)
	p.enc.SetEscapeHTML(false)
	p.buf.WriteString(`{"jobs":[`)
	return p
}

// job adds j to the page; its error is the connection's.
func (p *pageWriter) job(j api.Job) error {
	if p.jobs > 0 {
		p.buf.WriteByte(',')
	}
	p.jobs++
	if err := p.enc.Encode(j); err != nil {
		return err // an api.Job always encodes
	}
	p.buf.Truncate(p.buf.Len() - 1) // Encode's newline
	if p.buf.Len() < p.limit {
		return nil
	}
	return p.flush()
}

// end closes the page and sends what is left of it.
func (p *pageWriter) end(nextCursor, resumeCursor string, total int64) error {
	p.buf.WriteByte(']')
	if nextCursor != "" {
		p.buf.WriteString(`,"next_cursor":`)
		p.buf.WriteString(strconv.Quote(nextCursor)) // base64url: nothing to escape
	}
	if resumeCursor != "" {
		p.buf.WriteString(`,"resume_cursor":`)
		p.buf.WriteString(strconv.Quote(resumeCursor))
	}
	p.buf.WriteString(`,"total":`)
	p.buf.WriteString(strconv.FormatInt(total, 10))
	p.buf.WriteString("}\n")
	return p.flush()
}

// flush sends the buffer, after the status and headers the first time.
func (p *pageWriter) flush() error {
	if !p.started {
		h := p.w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		p.w.WriteHeader(http.StatusOK)
		p.started = true
	}
	_, err := p.w.Write(p.buf.Bytes())
	p.buf.Reset()
	return err
}
