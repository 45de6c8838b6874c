package surface_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// pools are values learned from the node's answers, which let generated
// requests reach past "not found" into the handlers: jobs, async
// requests, throwaway workers and keys the fuzz created, cursors.
type pools struct {
	jobIDs, asyncIDs, workerIDs, keyIDs, processIDs, webhookIDs, cursors []string
}

// keep adds v to a pool of bounded size.
func (g *generator) keep(pool *[]string, v string) {
	if v == "" || slices.Contains(*pool, v) {
		return
	}
	if len(*pool) < 64 {
		*pool = append(*pool, v)
		return
	}
	(*pool)[g.r.IntN(len(*pool))] = v
}

// lease is a job the fixture worker holds: valid worker calls name it.
type lease struct{ id, token string }

// generator builds requests for the operations of the served document:
// valid ones first, from the schemas and what the pools know, which the
// mutations then break.
type generator struct {
	r     *rand.Rand
	pools pools
	lease *lease
	creds credentials
}

// draft is a request being built.
type draft struct {
	op      *operation
	path    map[string]string // parameter → escaped value
	query   []string          // escaped name=value pairs
	header  http.Header
	members []member // the body object's members; see raw
	// raw replaces the body object when set (a mutation of the whole
	// body); noBody sends none.
	raw    []byte
	hasRaw bool
	noBody bool
	cred   credential
	// method, when set, replaces the operation's: the request is then
	// another operation's, or none's.
	method string
	// changes names what the mutations did, for the messages.
	changes []string
	// reserved names the member ("queue", "job.kind") in which a
	// mutation put what only jobd may insert.
	reserved string
}

// member is one member of a body object, its value as JSON text (which
// a mutation may make invalid).
type member struct {
	name  string
	value []byte
}

// credential is one Authorization value and what it grants.
type credential struct {
	label, value string
	// grants reports whether the credential passes an operation of scope.
	grants func(scope string) bool
	// invalid: a 401 (not a 403) when it does not pass.
	invalid bool
	// limited: a key limited to queues, which passes only the
	// operations of one queue's jobs (operation.QueueScoped).
	limited bool
}

// credentialSet is every kind of credential the tests send.
func (c credentials) all() []credential {
	never := func(string) bool { return false }
	nonWorker := func(scope string) bool { return scope != api.ScopeWorker }
	only := func(s string) func(string) bool { return func(scope string) bool { return scope == s } }
	among := func(s ...string) func(string) bool {
		return func(scope string) bool { return slices.Contains(s, scope) }
	}
	zeros := "jobd_000000000000_" + strings.Repeat("0", 64)
	return []credential{
		{"no credential", "", never, true, false},
		{"malformed (Basic)", "Basic " + c.admin, never, true, false},
		{"malformed (Bearer alone)", "Bearer", never, true, false},
		{"malformed (two words)", "Bearer " + c.read + " " + c.read, never, true, false},
		{"wrong key", "Bearer " + zeros, never, true, false},
		{"wrong secret", "Bearer " + c.admin + "x", never, true, false},
		{"revoked key", "Bearer " + c.revoked, never, true, false},
		{"submit key", "Bearer " + c.submit, only(api.ScopeSubmit), false, false},
		{"read key", "Bearer " + c.read, only(api.ScopeRead), false, false},
		{"admin key", "Bearer " + c.adminKey, nonWorker, false, false},
		{"cancel key", "Bearer " + c.cancel, only(api.ScopeCancel), false, false},
		{"queue-limited submit,read,cancel key", "Bearer " + c.limited, among(api.ScopeSubmit, api.ScopeRead, api.ScopeCancel), false, true},
		{"worker key", "Bearer " + c.worker, only(api.ScopeWorker), false, false},
		{"queue-limited worker's key", "Bearer " + c.limitedWorker, only(api.ScopeWorker), false, false},
		{"disabled worker's key", "Bearer " + c.disabledWorker, never, false, false},
		{"admin secret", "Bearer " + c.admin, nonWorker, false, false},
	}
}

// passes reports whether cred passes op's authentication.
func passes(op *operation, cred credential) bool {
	return op.Scope == "" || cred.grants(op.Scope) && (!cred.limited || op.QueueScoped)
}

// credFor picks a credential that passes op.
func (g *generator) credFor(op *operation) credential {
	var ok []credential
	for _, c := range g.creds.all() {
		if c.value != "" && passes(op, c) {
			ok = append(ok, c)
		}
	}
	return ok[g.r.IntN(len(ok))]
}

// valid drafts a well-formed request of op.
func (g *generator) valid(op *operation) *draft {
	d := &draft{op: op, path: map[string]string{}, header: http.Header{}, cred: g.credFor(op)}
	for _, name := range pathParams(op.Path) {
		d.path[name] = url.PathEscape(g.pathValue(op, name))
	}
	for _, p := range op.Params {
		switch {
		case p.In == "query" && (p.Required || g.r.IntN(2) == 0):
			d.query = append(d.query, url.QueryEscape(p.Name)+"="+url.QueryEscape(g.queryValue(op, p)))
		case p.In == "header" && g.r.IntN(2) == 0:
			d.header.Set(p.Name, g.headerValue(p))
		}
	}
	switch {
	case op.Body != nil:
		d.header.Set("Content-Type", "application/json")
		d.members = g.object(op, op.Body, true)
		if !op.BodyRequired && len(d.members) == 0 && g.r.IntN(2) == 0 {
			d.noBody = true
		}
	case op.OpaqueBody:
		d.header.Set("Content-Type", "application/json")
		d.raw, d.hasRaw = []byte(`{"to":"the upstream"}`), true
	default:
		d.noBody = true
	}
	return d
}

// object drafts the members of a body object: the required ones, and
// each optional one with even odds (all of them when full).
func (g *generator) object(op *operation, s *schema, top bool) []member {
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []member
	for _, name := range names {
		if !slices.Contains(s.Required, name) && g.r.IntN(2) == 0 {
			continue
		}
		out = append(out, member{name, g.value(op, name, s.Properties[name])})
	}
	return out
}

// value is a valid value of property name, as JSON text: from what jobd
// expects of that name, else from the schema.
func (g *generator) value(op *operation, name string, s *schema) []byte {
	q := func(v string) []byte { b, _ := json.Marshal(v); return b }
	switch name {
	case "lease_token":
		if g.lease != nil && strings.HasPrefix(op.Path, "/api/v1/worker/") {
			return q(g.lease.token)
		}
		return q(uuid.NewString())
	case "leases":
		if g.lease != nil {
			return []byte(fmt.Sprintf(`[{"id":%q,"lease_token":%q}]`, g.lease.id, g.lease.token))
		}
		return []byte(`[]`)
	case "kind", "task":
		return q(pick(g.r, "fuzz.noop", "k", "fuzz.other"))
	case "queue":
		return q(pick(g.r, "default", "fuzz-a", workQueue))
	case "queues":
		return []byte(`["` + workQueue + `"]`)
	case "wait":
		return q(pick(g.r, "0s", "5ms"))
	case "lease_ttl":
		return q(pick(g.r, "60s", "1h"))
	case "run_at", "available_at":
		return q(time.Now().Add(time.Duration(g.r.IntN(3600)) * time.Second).UTC().Format(time.RFC3339Nano))
	case "args", "metadata":
		return []byte(fmt.Sprintf(`{"n":%d,"s":"v é"}`, g.r.IntN(100)))
	case "items":
		return []byte(`{"a.mp4":"done","b.mp4":"encoding"}`)
	case "checkpoint":
		return []byte(fmt.Sprintf(`{"frame":%d}`, g.r.IntN(1000)))
	case "result":
		return []byte(`{"ok":true}`)
	case "error":
		return q("boom: " + strconv.Itoa(g.r.IntN(100)))
	case "phase":
		return q(pick(g.r, "encode", "upload", "é"))
	case "name":
		return q(fmt.Sprintf("fuzz %d", g.r.IntN(1000)))
	case "capabilities", "requires", "prefers":
		return []byte(pick(g.r, `[]`, `["gpu"]`, `["cpu","gpu"]`))
	case "idempotency_key", "lock_key", "partition_key":
		return q(fmt.Sprintf("%s-%d", name, g.r.IntN(50)))
	case "priority":
		return []byte(strconv.Itoa(g.r.IntN(200)))
	case "max_attempts":
		return []byte(strconv.Itoa(1 + g.r.IntN(5)))
	case "max":
		return []byte(strconv.Itoa(1 + g.r.IntN(3)))
	case "done":
		return []byte(strconv.Itoa(g.r.IntN(5)))
	case "total":
		return []byte(strconv.Itoa(5 + g.r.IntN(5)))
	}
	return g.bySchema(op, name, s)
}

// bySchema is a valid value of s alone.
func (g *generator) bySchema(op *operation, name string, s *schema) []byte {
	if s != nil && len(s.Enum) > 0 {
		return s.Enum[g.r.IntN(len(s.Enum))]
	}
	switch s.mainType() {
	case "string":
		switch s.Format {
		case "uuid":
			return []byte(`"` + uuid.NewString() + `"`)
		case "date-time":
			return []byte(`"` + time.Now().UTC().Format(time.RFC3339) + `"`)
		}
		return []byte(fmt.Sprintf(`"%s-%d"`, name, g.r.IntN(100)))
	case "integer":
		lo := 0
		if s.Minimum != nil {
			lo = int(*s.Minimum)
		}
		return []byte(strconv.Itoa(lo + g.r.IntN(5)))
	case "number":
		return []byte(strconv.Itoa(g.r.IntN(100)))
	case "boolean":
		return []byte(strconv.FormatBool(g.r.IntN(2) == 0))
	case "array":
		if s.Items == nil {
			return []byte(`[]`)
		}
		parts := make([]string, g.r.IntN(3))
		for i := range parts {
			parts[i] = string(g.value(op, name, s.Items))
		}
		return []byte("[" + strings.Join(parts, ",") + "]")
	case "object":
		ms := g.object(op, s, false)
		return renderObject(ms)
	}
	return []byte(pick(g.r, `{"any":[1,"two",null]}`, `"text"`, `42`, `null`))
}

// pathValue is a valid value of a path parameter of op.
func (g *generator) pathValue(op *operation, name string) string {
	p := op.Path
	switch name {
	case "ns":
		return namespace
	case "name":
		return pick(g.r, "default", "fuzz-a", "fuzz-b")
	case "upstream":
		return upstreamName
	case "path":
		return pick(g.r, "echo", "a/b/c", "reports/42")
	}
	fromPool := func(pool []string) string {
		if len(pool) == 0 || g.r.IntN(5) == 0 {
			return uuid.NewString()
		}
		return pool[g.r.IntN(len(pool))]
	}
	switch {
	case strings.HasPrefix(p, "/api/v1/worker/jobs/"):
		if g.lease != nil && g.r.IntN(4) != 0 {
			return g.lease.id
		}
		return fromPool(g.pools.jobIDs)
	case strings.HasPrefix(p, "/api/v1/jobs/"):
		return fromPool(g.pools.jobIDs)
	case strings.HasPrefix(p, "/api/v1/workers/"):
		return fromPool(g.pools.workerIDs) // throwaway workers only
	case strings.HasPrefix(p, "/api/v1/keys/"):
		return fromPool(g.pools.keyIDs) // throwaway keys only
	case strings.HasPrefix(p, "/api/v1/webhooks/"):
		return fromPool(g.pools.webhookIDs)
	case strings.HasPrefix(p, "/api/v1/processes/"):
		if len(g.pools.processIDs) == 0 || g.r.IntN(3) == 0 {
			return fmt.Sprintf("p%d", g.r.IntN(8))
		}
		return g.pools.processIDs[g.r.IntN(len(g.pools.processIDs))]
	}
	return fromPool(g.pools.asyncIDs)
}

// queryValue is a valid value of a query parameter of op.
func (g *generator) queryValue(op *operation, p *param) string {
	switch p.Name {
	case "cursor":
		if len(g.pools.cursors) > 0 && g.r.IntN(3) != 0 {
			return g.pools.cursors[g.r.IntN(len(g.pools.cursors))]
		}
		return ""
	case "wait":
		return pick(g.r, "0s", "5ms")
	case "timeout":
		return pick(g.r, "5s", "10s")
	case "updated_since":
		return time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	case "stamp":
		return strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	case "after":
		return pick(g.r, "", "p1", "p4")
	case "queue", "kind", "lock_key", "partition_key":
		return pick(g.r, "default", "fuzz.noop", workQueue)
	}
	s := p.Schema
	if s != nil && s.mainType() == "array" && s.Items != nil {
		s = s.Items
	}
	if s != nil && len(s.Enum) > 0 {
		var v string
		_ = json.Unmarshal(s.Enum[g.r.IntN(len(s.Enum))], &v)
		return v
	}
	if s != nil && s.mainType() == "integer" {
		lo, hi := 0, 20
		if s.Minimum != nil {
			lo = int(*s.Minimum)
		}
		return strconv.Itoa(lo + g.r.IntN(hi))
	}
	return "x"
}

// headerValue is a valid value of a header parameter.
func (g *generator) headerValue(p *param) string {
	if p.Name == "X-Async" {
		return pick(g.r, "store", "store", "true")
	}
	return fmt.Sprintf("idem-%d", g.r.IntN(40))
}

// render makes the request of d.
func (d *draft) render() request {
	path := d.op.Path
	for name, v := range d.path {
		path = strings.Replace(path, "{"+name+"}", v, 1)
	}
	if len(d.query) > 0 {
		path += "?" + strings.Join(d.query, "&")
	}
	req := request{method: d.op.Method, path: path, header: d.header, cred: d.cred.value, noBody: d.noBody}
	if d.method != "" {
		req.method = d.method
	}
	switch {
	case d.noBody:
	case d.hasRaw:
		req.body = d.raw
	default:
		req.body = renderObject(d.members)
	}
	return req
}

// renderObject writes members as a JSON object, values as they are.
func renderObject(ms []member) []byte {
	b := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(m.name)
		b = append(b, name...)
		b = append(b, ':')
		b = append(b, m.value...)
	}
	return append(b, '}')
}

func pick[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }
