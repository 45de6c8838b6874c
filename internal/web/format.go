package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"time":       timeTag,
	"duration":   humanDuration,
	"since":      since,
	"until":      until,
	"json":       prettyJSON,
	"percent":    percent,
	"items":      itemRows,
	"short":      short,
	"join":       strings.Join,
	"pathEscape": url.PathEscape,
	"itemsKey":   itemsKey,
	"compact":    compactJSON,
	"lockKey":    process.LockKey,
	"plural":     pluralOf,
	"someID":     someID,
	"active":     activeTasks,
}

// someID reports whether id is set (a job's WorkflowID or CanceledBy).
func someID(id uuid.UUID) bool { return id != uuid.Nil }

// activeTasks counts a workflow's tasks that are not final.
func activeTasks(w *job.Workflow) int { return w.TaskCount - w.Succeeded - w.Failed - w.Canceled }

// itemsKey is a job's per-item progress as compact JSON ("null" for
// none): the job page's script compares it with the stream's, to learn
// when to re-read the rows.
func itemsKey(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

// compactJSON is raw on one line, "" for nothing to show (null, {} or
// none).
func compactJSON(raw json.RawMessage) string {
	s := itemsKey(raw)
	if s == "null" || s == "{}" {
		return ""
	}
	return s
}

// pluralOf is plural for the templates, whose counts are int64.
func pluralOf(n int64, one, many string) string { return plural(int(n), one, many) }

// timeTag renders t as <time datetime="RFC 3339">: the UTC text without
// JavaScript, which the script replaces with the browser's local time.
// It takes a time.Time or a *time.Time (nil: a dash).
func timeTag(v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return "—"
		}
		t = *x
	default:
		return "—"
	}
	if t.IsZero() {
		return "—"
	}
	t = t.UTC()
	return template.HTML(fmt.Sprintf(`<time datetime="%s">%s</time>`,
		t.Format(time.RFC3339Nano), t.Format("2006-01-02 15:04:05 UTC")))
}

// humanDuration writes d for people: "3 m 12 s", "2 h 5 m", "450 ms".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		m, s := int(d.Minutes()), int(d.Seconds())%60
		if s == 0 {
			return fmt.Sprintf("%d m", m)
		}
		return fmt.Sprintf("%d m %d s", m, s)
	case d < 48*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d m", h, m)
	}
	days, h := int(d.Hours())/24, int(d.Hours())%24
	if h == 0 {
		return fmt.Sprintf("%d d", days)
	}
	return fmt.Sprintf("%d d %d h", days, h)
}

// since is how long ago t was, from now (both by the server's clock).
func since(now time.Time, v any) string {
	switch x := v.(type) {
	case time.Time:
		return humanDuration(now.Sub(x)) + " ago"
	case *time.Time:
		if x == nil {
			return "never"
		}
		return humanDuration(now.Sub(*x)) + " ago"
	}
	return ""
}

// until is how long until t from now ("due" once passed).
func until(now, t time.Time) string {
	if !t.After(now) {
		return "due"
	}
	return "in " + humanDuration(t.Sub(now))
}

// maxShownJSON bounds the JSON a page shows of one value.
const maxShownJSON = 64 << 10

// prettyJSON indents raw JSON for reading; "" for none.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	if buf.Len() > maxShownJSON {
		return buf.String()[:maxShownJSON] + "\n… (cut: read the whole value from the API)"
	}
	return buf.String()
}

// percent is done/total in whole percent, 0 when total is not positive.
func percent(done, total int64) int64 {
	if total <= 0 {
		return 0
	}
	return min(max(done*100/total, 0), 100)
}

// short cuts a long text (an id) for a table cell.
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// itemRow is one item of a job's per-item progress.
type itemRow struct {
	Name        string
	Done, Total int64
	State       string
	Percent     int64
}

// itemRows reads a job's per-item progress, as the transcoding source's
// per-quality rows report it: an object of items by name, or an array of
// items with a name, each with done and total (or percent, or progress
// 0..1) and maybe a state (or phase, status). Nil when it is neither,
// and the page shows the raw JSON.
func itemRows(raw json.RawMessage) []itemRow {
	type item struct {
		Name     string   `json:"name"`
		Done     *float64 `json:"done"`
		Total    *float64 `json:"total"`
		Percent  *float64 `json:"percent"`
		Progress *float64 `json:"progress"`
		State    string   `json:"state"`
		Phase    string   `json:"phase"`
		Status   string   `json:"status"`
	}
	row := func(name string, it item) itemRow {
		r := itemRow{Name: name, State: it.State}
		if r.State == "" {
			r.State = it.Phase
		}
		if r.State == "" {
			r.State = it.Status
		}
		switch {
		case it.Done != nil && it.Total != nil:
			r.Done, r.Total = int64(*it.Done), int64(*it.Total)
			r.Percent = percent(r.Done, r.Total)
		case it.Percent != nil:
			r.Percent = min(max(int64(*it.Percent), 0), 100)
			r.Done, r.Total = r.Percent, 100
		case it.Progress != nil:
			r.Percent = min(max(int64(*it.Progress*100), 0), 100)
			r.Done, r.Total = r.Percent, 100
		}
		return r
	}
	var byName map[string]item
	if err := json.Unmarshal(raw, &byName); err == nil && len(byName) > 0 {
		names := make([]string, 0, len(byName))
		for name := range byName {
			names = append(names, name)
		}
		sortNatural(names)
		rows := make([]itemRow, 0, len(names))
		for _, name := range names {
			rows = append(rows, row(name, byName[name]))
		}
		return rows
	}
	var list []item
	if err := json.Unmarshal(raw, &list); err == nil && len(list) > 0 {
		rows := make([]itemRow, 0, len(list))
		for i, it := range list {
			name := it.Name
			if name == "" {
				name = fmt.Sprint(i + 1)
			}
			rows = append(rows, row(name, it))
		}
		return rows
	}
	return nil
}

// sortNatural sorts names with their numbers by value ("480p" before
// "1080p").
func sortNatural(names []string) {
	key := func(s string) (int, string) {
		n, i := 0, 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			n = n*10 + int(s[i]-'0')
			i++
		}
		if i == 0 {
			n = -1
		}
		return n, s
	}
	slices.SortFunc(names, func(a, b string) int {
		na, sa := key(a)
		nb, sb := key(b)
		if na != nb {
			return na - nb
		}
		return strings.Compare(sa, sb)
	})
}

// limitsText shows a queue's flow control in a cell: "" for none, or
// "global 5 · per partition 2 · 100 per 1m by partition".
func limitsText(l flow.Limits) string {
	var parts []string
	if l.GlobalLimit > 0 {
		parts = append(parts, fmt.Sprintf("global %d", l.GlobalLimit))
	}
	if l.PartitionLimit > 0 {
		parts = append(parts, fmt.Sprintf("per partition %d", l.PartitionLimit))
	}
	if r := l.Rate; r != nil {
		rate := fmt.Sprintf("%d per %s", r.Limit, humanDuration(r.Period))
		if r.Burst > 1 {
			rate += fmt.Sprintf(" (burst %d)", r.Burst)
		}
		if r.By == flow.ByPartitionKey {
			rate += " by partition"
		}
		parts = append(parts, rate)
	}
	if l.ThrottleBy == flow.ByPartitionKey {
		parts = append(parts, "throttles by partition")
	}
	return strings.Join(parts, " · ")
}

// throttleText shows a queue's throttles at now in a cell: "" for none,
// "for 42 s", "3 partitions", or both.
func throttleText(q store.QueueSettings, now time.Time) string {
	var parts []string
	if q.ThrottledUntil != nil && q.ThrottledUntil.After(now) {
		parts = append(parts, "for "+humanDuration(q.ThrottledUntil.Sub(now)))
	}
	switch n := len(q.Throttled); n {
	case 0:
	case 1:
		parts = append(parts, "1 partition")
	default:
		parts = append(parts, fmt.Sprintf("%d partitions", n))
	}
	return strings.Join(parts, ", ")
}
