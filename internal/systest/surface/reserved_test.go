package surface_test

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
)

// reservedValues are, for each body member that names a job's queue,
// kind or keys, values that only jobd's own code may insert (job.
// CheckCallerInsert): its internal queues and kinds, and the prefixes of
// the idempotency and lock keys it derives.
var reservedValues = map[string][]string{
	"queue":           {`"jobd.webhooks"`, `"jobd.x"`, `"gateway"`, `"processes"`},
	"kind":            {`"jobd.webhook"`, `"gateway.request"`, `"process.task"`, `"process.timeout"`},
	"task":            {`"jobd.webhook"`, `"process.task"`},
	"idempotency_key": {`"schedule:s:2030-01-01T00:00:00Z"`, `"process:ns/p1:k"`, `"gateway:k"`, `"jobd:k"`},
	"lock_key":        {`"process:ns/p1"`, `"jobd:k"`},
}

// templateMember is the body member of a schedule that holds its job
// template, whose members are named "job.queue"… in a refusal.
const templateMember = "job"

// listMember marks a target in the first job of a body's list of jobs (a
// batch's "jobs"): "jobs[0].queue", as the refusal names it.
const listMember = "[0]."

// leafOf is the member a target names: "queue" of "queue", of
// "job.queue" and of "jobs[0].queue".
func leafOf(target string) (leaf string, inTemplate bool) {
	if _, leaf, ok := strings.Cut(target, listMember); ok {
		return leaf, true
	}
	if leaf, ok := strings.CutPrefix(target, templateMember+"."); ok {
		return leaf, true
	}
	return target, false
}

// listOf is the body member of a target in a list ("jobs" of
// "jobs[0].queue"); "" for another target.
func listOf(target string) string {
	list, _, _ := strings.Cut(target, listMember)
	if list == target {
		return ""
	}
	return list
}

// reservedTargets lists the members of op's body that can carry a
// reserved value: its own, and its job template's ("job.queue").
func reservedTargets(op *operation) []string {
	if op.Body == nil {
		return nil
	}
	var out []string
	for name := range op.Body.Properties {
		if _, ok := reservedValues[name]; ok {
			out = append(out, name)
		}
	}
	if tmpl := op.Body.Properties[templateMember]; tmpl != nil {
		for name := range tmpl.Properties {
			if _, ok := reservedValues[name]; ok {
				out = append(out, templateMember+"."+name)
			}
		}
	}
	for list, s := range op.Body.Properties {
		if s.mainType() != "array" || s.Items == nil {
			continue
		}
		for name := range s.Items.Properties {
			if _, ok := reservedValues[name]; ok {
				out = append(out, list+listMember+name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// setReserved puts value in d's member target ("queue", or "job.queue"
// in the template), replacing it or adding it, and drops the trigger's
// other name of the kind, so that the request names one kind only.
func setReserved(d *draft, target string, value []byte) bool {
	leaf, inTemplate := leafOf(target)
	if !inTemplate {
		if other := map[string]string{"task": "kind", "kind": "task"}[leaf]; other != "" {
			d.members = slices.DeleteFunc(d.members, func(m member) bool { return m.name == other })
		}
		setMember(d, leaf, value)
		return true
	}
	if list := listOf(target); list != "" {
		i := slices.IndexFunc(d.members, func(m member) bool { return m.name == list })
		var items []map[string]json.RawMessage
		if i < 0 || json.Unmarshal(d.members[i].value, &items) != nil || len(items) == 0 || items[0] == nil {
			return false
		}
		items[0][leaf] = value
		b, err := json.Marshal(items)
		if err != nil {
			return false
		}
		d.members[i].value = b
		return true
	}
	i := slices.IndexFunc(d.members, func(m member) bool { return m.name == templateMember })
	if i < 0 {
		return false
	}
	var tmpl map[string]json.RawMessage
	if json.Unmarshal(d.members[i].value, &tmpl) != nil || tmpl == nil {
		return false
	}
	tmpl[leaf] = value
	b, err := json.Marshal(tmpl)
	if err != nil {
		return false
	}
	d.members[i].value = b
	return true
}

// setMember sets (or adds) the member name of d's body to value.
func setMember(d *draft, name string, value []byte) {
	for i := range d.members {
		if d.members[i].name == name {
			d.members[i].value = value
			return
		}
	}
	d.members = append(d.members, member{name, value})
}

// mutateReserved names, in a member that names a job's queue, kind or
// keys (or the schedule template's), what only jobd may insert: the
// request must never be accepted, whoever sends it.
func mutateReserved(g *generator, d *draft) bool {
	if d.hasRaw || d.noBody {
		return false
	}
	targets := reservedTargets(d.op)
	if len(targets) == 0 {
		return false
	}
	target := targets[g.r.IntN(len(targets))]
	leaf, _ := leafOf(target)
	vs := reservedValues[leaf]
	if !setReserved(d, target, []byte(vs[g.r.IntN(len(vs))])) {
		return false
	}
	d.reserved = target
	return true
}

// checkReserved: a request naming a reserved queue, kind or key is never
// accepted, whoever sends it. (Which refusal it gets depends on what
// else the mutations broke; TestReservedNamesMatrix holds the refusal of
// an otherwise valid request.)
func (f *fuzz) checkReserved(d *draft, a *answer) {
	if d.reserved != "" && d.method == "" && a.status < 300 && namesReserved(d.render().body, d.reserved) {
		f.find("reserved name accepted", d, a, "the request names "+d.reserved)
	}
}

// namesReserved reports whether body, as the server decodes it (the last
// of duplicate members wins), still holds a reserved value in target:
// a later mutation may have replaced it.
func namesReserved(body []byte, target string) bool {
	leaf, inTemplate := leafOf(target)
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return false
	}
	switch list := listOf(target); {
	case list != "":
		var items []map[string]json.RawMessage
		if json.Unmarshal(obj[list], &items) != nil || len(items) == 0 {
			return false
		}
		obj = items[0]
	case inTemplate:
		var tmpl map[string]json.RawMessage
		if json.Unmarshal(obj[templateMember], &tmpl) != nil {
			return false
		}
		obj = tmpl
	}
	v, ok := obj[leaf]
	return ok && slices.Contains(reservedValues[leaf], string(v))
}

// reservedBases are valid requests of the operations that insert a
// caller's jobs, which TestReservedNamesMatrix breaks one member at a
// time. An operation of the served document whose body names a job's
// queue, kind or keys and has no base here fails the test: a new insert
// route (a batch submit) must be added, and must refuse reserved names
// (job.CheckCallerInsert).
var reservedBases = map[string]string{
	"POST /api/v1/jobs":            `{"kind":"k","args":{"n":1}}`,
	"POST /api/v1/jobs/trigger":    `{"task":"k","args":{"n":1}}`,
	"POST /api/v1/jobs/batch":      `{"jobs":[{"kind":"k","args":{"n":1}}]}`,
	"PUT /api/v1/schedules/{name}": `{"cron":"@hourly","job":{"kind":"k"}}`,
	"POST /api/v1/workflows":       `{"name":"w","tasks":[{"ref":"a","kind":"k","args":{"n":1}}]}`,
}

// TestReservedNamesMatrix: every operation of the served document whose
// body (or job template) names a job's queue, kind or keys × every
// credential that passes it (the admin secret too) × every member and
// reserved value: 422 naming the member ("job.queue" in a template), and
// the database is as it was.
func TestReservedNamesMatrix(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		n := startNode(t, driver)
		sp := n.fetchSpec()
		g := &generator{r: rand.New(rand.NewPCG(25, 25)), creds: n.creds}
		checked := 0
		for _, op := range sp.Ops {
			targets := reservedTargets(op)
			if len(targets) == 0 {
				continue
			}
			base, ok := reservedBases[op.String()]
			if !ok {
				t.Errorf("%s names a job's queue, kind or keys (%v): give it a base request in reservedBases", op, targets)
				continue
			}
			for _, target := range targets {
				leaf, _ := leafOf(target)
				for _, cred := range n.creds.all() {
					if cred.value == "" || !passes(op, cred) {
						continue
					}
					for _, v := range reservedValues[leaf] {
						d := g.valid(op)
						d.cred, d.noBody, d.hasRaw = cred, false, false
						d.members = membersOf(t, base)
						if !setReserved(d, target, []byte(v)) {
							t.Fatalf("%s: cannot set %s", op, target)
						}
						checked++
						checkRefused(t, n, d, op.String()+" with "+cred.label+", "+target+" "+v, target)
					}
				}
			}
		}
		if checked == 0 {
			t.Fatal("no operation of the served document names a job's queue, kind or keys")
		}
		t.Logf("%s: %d refusals of reserved names checked", driver, checked)
	})
}

// membersOf is the members of a JSON object, in order of name.
func membersOf(t *testing.T, body string) []member {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	var out []member
	for name, v := range m {
		out = append(out, member{name, v})
	}
	slices.SortFunc(out, func(a, b member) int { return strings.Compare(a.name, b.name) })
	return out
}

// checkRefused sends d, which must be 422 validation naming field and
// leave the database as it was.
func checkRefused(t *testing.T, n *node, d *draft, what, field string) {
	t.Helper()
	before, err := n.fingerprint(nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := n.send(d.render(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var p api.Problem
	if a.status != 422 || json.Unmarshal(a.body, &p) != nil || p.Type != api.ProblemValidation || p.Field != field {
		t.Errorf("%s: %d %s, want 422 validation naming %s", what, a.status, a.body, field)
	}
	after, err := n.fingerprint(nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := before.diff(after); diff != "" {
		t.Errorf("%s: refused, yet the database changed: %s", what, diff)
	}
}
