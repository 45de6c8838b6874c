package web

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// queueRow is one queue of the overview.
type queueRow struct {
	Name   string `json:"name"`
	Paused bool   `json:"paused"`
	// From the queue health snapshot: the active jobs.
	Queued      int64 `json:"queued"`
	Scheduled   int64 `json:"scheduled"`
	Running     int64 `json:"running"`
	LockBlocked int64 `json:"lock_blocked"`
	// OldestAge is how long the oldest due job has waited ("" for none).
	OldestAge string `json:"oldest_age"`
	// Limits is the queue's flow control, Throttled its throttles ("" for
	// none), from the queues' settings.
	Limits    string `json:"limits"`
	Throttled string `json:"throttled"`
	// From the throughput query: the jobs finished in the window.
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Canceled  int64 `json:"canceled"`
	// Chart is the inline SVG of the jobs finished per minute.
	Chart template.HTML `json:"-"`
}

// overviewData is the overview page, and (as JSON) the summary the
// overview's script refreshes its counts from.
type overviewData struct {
	Queues []queueRow `json:"queues"`
	// WorkersOnline counts the remote workers that are enabled and not
	// offline; WorkersTotal all of them.
	WorkersOnline int64 `json:"workers_online"`
	WorkersTotal  int64 `json:"workers_total"`
	// Leading: "yes", "no" or "" (unknown).
	Leading string `json:"leading"`
	// At is when the counts were read; Window the chart's span.
	At     time.Time `json:"at"`
	Window string    `json:"window"`
}

// read gathers the overview: the queue health snapshot (active jobs,
// workers), which a scrape of /metrics reads too, the queues' settings
// (paused, limits, throttles; a small table, no job read), and one
// indexed query of the jobs finished in the window. withChart draws the
// charts.
func (s *server) read(ctx context.Context, withChart bool) (*overviewData, error) {
	h, err := s.health(ctx)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	start := now.Add(-s.cfg.ThroughputWindow).Truncate(time.Minute)
	finished, err := s.store.QueueThroughput(ctx, start)
	if err != nil {
		return nil, err
	}
	d := &overviewData{At: h.At.UTC(), Window: humanDuration(s.cfg.ThroughputWindow)}
	rows := map[string]*queueRow{}
	row := func(name string) *queueRow {
		if r, ok := rows[name]; ok {
			return r
		}
		r := &queueRow{Name: name}
		rows[name] = r
		return r
	}
	for _, q := range h.Queues {
		r := row(q.Queue)
		r.Queued, r.Scheduled, r.Running, r.LockBlocked = q.Queued, q.Scheduled, q.Running, q.LockBlocked
		if q.OldestAvailable != nil {
			r.OldestAge = humanDuration(max(h.At.Sub(*q.OldestAvailable), 0))
		}
	}
	// The settings, paused flags included, are read fresh: an action
	// (Pause, Resume) shows at once, on every node, not at the next
	// snapshot. The query reads no job.
	settings, err := s.store.QueueSettings(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range settings {
		r := row(q.Name)
		r.Paused = q.Paused
		r.Limits, r.Throttled = limitsText(q.Limits), throttleText(q, now)
	}
	perQueue := map[string][]store.Throughput{}
	for _, t := range finished {
		r := row(t.Queue)
		switch t.State {
		case job.StateSucceeded:
			r.Succeeded += t.Count
		case job.StateFailed:
			r.Failed += t.Count
		case job.StateCanceled:
			r.Canceled += t.Count
		}
		perQueue[t.Queue] = append(perQueue[t.Queue], t)
	}
	for _, r := range rows {
		if withChart {
			r.Chart = chart(start, now, perQueue[r.Name])
		}
		d.Queues = append(d.Queues, *r)
	}
	slices.SortFunc(d.Queues, func(a, b queueRow) int { return strings.Compare(a.Name, b.Name) })
	for _, w := range h.Workers {
		d.WorkersTotal += w.Count
		if !w.Disabled && w.Status != store.WorkerOffline {
			d.WorkersOnline += w.Count
		}
	}
	if s.cfg.Leading != nil {
		d.Leading = "no"
		if s.cfg.Leading() {
			d.Leading = "yes"
		}
	}
	return d, nil
}

// health is the node's queue health snapshot, or a read of the store
// when there is none yet.
func (s *server) health(ctx context.Context) (*store.Health, error) {
	if s.cfg.Health != nil {
		if h, _ := s.cfg.Health(); h != nil {
			return h, nil
		}
	}
	return s.store.QueueHealth(ctx, store.HealthParams{})
}

// overview: GET /ui/.
func (s *server) overview(w http.ResponseWriter, r *http.Request, v viewer) error {
	d, err := s.read(r.Context(), true)
	if err != nil {
		return err
	}
	s.render(w, r, v, http.StatusOK, "overview", "Overview", d)
	return nil
}

// summary: GET /ui/summary, the overview's counts as JSON: the one
// request the overview's script repeats.
func (s *server) summary(w http.ResponseWriter, r *http.Request, v viewer) error {
	d, err := s.read(r.Context(), false)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(d)
}

// pauseQueue: POST /ui/queues/{name}/pause, as POST
// /api/v1/queues/{name}/pause.
func (s *server) pauseQueue(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.setPaused(w, r, true)
}

// resumeQueue: POST /ui/queues/{name}/resume.
func (s *server) resumeQueue(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.setPaused(w, r, false)
}

func (s *server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) error {
	name := r.PathValue("name")
	if err := httpapi.CheckQueueName(name); err != nil {
		return err
	}
	if err := s.store.QueueSetPaused(r.Context(), name, paused); err != nil {
		return err
	}
	what := "resumed"
	if paused {
		what = "paused"
	}
	return done(w, r, "/ui/", fmt.Sprintf("Queue %s %s.", name, what))
}

// chart draws the jobs of one queue finished per minute from start to
// now as an inline SVG of stacked bars: succeeded, then failed and
// canceled. Numbers only, and the title's counts: nothing to escape.
func chart(start, now time.Time, points []store.Throughput) template.HTML {
	minutes := int(now.Sub(start)/time.Minute) + 1
	type bar struct{ ok, bad int64 }
	bars := make([]bar, minutes)
	var top int64 = 1
	for _, p := range points {
		i := int(p.Minute.Sub(start) / time.Minute)
		if i < 0 || i >= minutes {
			continue
		}
		if p.State == job.StateSucceeded {
			bars[i].ok += p.Count
		} else {
			bars[i].bad += p.Count
		}
		top = max(top, bars[i].ok+bars[i].bad)
	}
	const width, height, gap = 150, 32, 1
	bw := float64(width) / float64(minutes)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="jobs finished per minute, the last %d minutes; the highest bar is %d">`,
		width, height, width, height, minutes, top)
	for i, x := range bars {
		okH := float64(x.ok) / float64(top) * height
		badH := float64(x.bad) / float64(top) * height
		xpos := float64(i) * bw
		if x.ok > 0 {
			fmt.Fprintf(&b, `<rect class="ok" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, xpos, height-okH, bw-gap, okH)
		}
		if x.bad > 0 {
			fmt.Fprintf(&b, `<rect class="bad" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, xpos, height-okH-badH, bw-gap, badH)
		}
	}
	b.WriteString(`<line class="axis" x1="0" y1="31.5" x2="150" y2="31.5"/></svg>`)
	return template.HTML(b.String())
}
