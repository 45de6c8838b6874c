package surface_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// The raw material of the mutations.
var (
	// wrongTyped are values of each JSON type; a mutation puts one of
	// another type than the schema's in a member.
	wrongTyped = map[string][]string{
		"string":  {`"text"`, `""`, `"12"`, `"true"`},
		"integer": {`12`, `0`, `-7`},
		"number":  {`1.5`, `-0.0`},
		"boolean": {`true`, `false`},
		"null":    {`null`},
		"array":   {`[]`, `[1,"a",null]`, `[[]]`},
		"object":  {`{}`, `{"x":{"y":1}}`},
	}
	// hostileStrings are JSON strings no store should keep as is.
	hostileStrings = []string{
		`"a\u0000b"`, `"\u0000"`, `"\ud800"`, `"x\udc00y"`, `"\ud800\u0041"`, `"\udbff\udbff"`,
		"\"\xff\xfe\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"a\xc0\xafb\"", `"\uDFFF"`,
	}
	// hostileNumbers are numbers at or beyond every integer type's edge.
	hostileNumbers = []string{
		`1e400`, `-1e400`, `9223372036854775808`, `-9223372036854775809`, `9223372036854775807`,
		`18446744073709551616`, `2147483648`, `-2147483649`, `1e-400`, `0`, `-1`, `1.5`, `1E309`, `-0`,
		`100000000000000000000000000000000000000000000000000000000000000000000000`,
	}
	// garbageIDs are path segments that are not what a route expects.
	garbageIDs = []string{
		"foobar", "0", "-1", "00000000-0000-0000-0000-000000000000", "%00", "%ff", "%c3%28", "%ed%a0%80",
		"a%00b", "%2F", "%2e%2e", "%20", "%C3%A9", "%F0%9F%98%80", "a%0Ab", "%7F", "%u0000", "null", "undefined",
		"{id}", "%7Bid%7D", "..%2F..%2Fetc", "1e400", "-9223372036854775809",
	}
	// garbageQuery are values of query parameters of every wrong kind.
	garbageQuery = []string{
		"", "x", "-1", "0", "99999999999999999999", "1e3", "0x10", "%201", "%00", "%ff", "1.5", "NaN", "Inf",
		"-0", "true", "%E2%80%AE", "yesterday", "2024-02-30T00:00:00Z", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z", "-0001-01-01T00:00:00Z", "2024-01-01T00:00:00%2B25:00", "2024-01-01",
		"10000-01-01T00:00:00Z", "1h", "-5s", "9223372036854775807ns", "%zz",
	}
	// wrongContentTypes are Content-Type values of bodies that are JSON.
	wrongContentTypes = []string{
		"text/plain", "application/xml", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded",
		"application/json; charset=utf-16", "", "*/*", "application/problem+json",
	}
	// wholeBodies replace a body object.
	wholeBodies = []string{
		"", " ", "not json", "{", "}", "{}}", `{"a":1} {"b":2}`, "[]", "[{}]", "null", `"string"`, "42", "true",
		"\x00\x01\x02", "\xff\xfe{}", "\xef\xbb\xbf{}", `{"a":}`, `{'a':1}`, `{"a":1,}`, "{\"a\":\"\n\"}",
		`{"":1}`, `{"\u0000":1}`, "{\"\xff\":1}",
	}
)

// mutation changes a draft; it reports false when it does not apply.
type mutation struct {
	name  string
	apply func(g *generator, d *draft) bool
}

// mutations are every kind of breakage the fuzz applies.
var mutations = []mutation{
	{"wrong type", mutateWrongType},
	{"drop required", mutateDropRequired},
	{"unknown field", mutateUnknownField},
	{"hostile string", mutateHostileString},
	{"hostile number", mutateHostileNumber},
	{"long string", mutateLongString},
	{"deep nesting", mutateDeepNesting},
	{"whole body", mutateWholeBody},
	{"content type", mutateContentType},
	{"path", mutatePath},
	{"query value", mutateQueryValue},
	{"query unknown", mutateQueryUnknown},
	{"header", mutateHeader},
	{"credential", mutateCredential},
	{"duplicate member", mutateDuplicateMember},
	{"rule-breaking value", mutateRuleBreaking},
	{"rule-breaking value", mutateRuleBreaking},
	{"method", mutateMethod},
	{"reserved name", mutateReserved},
}

func mutateMethod(g *generator, d *draft) bool {
	if g.r.IntN(3) != 0 {
		return false // another method is mostly a 405: now and then only
	}
	d.method = pick(g.r, "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
	return d.method != d.op.Method
}

// mutate applies 1 to 3 mutations that apply to d.
func (g *generator) mutate(d *draft) {
	want := 1 + g.r.IntN(3)
	for tries := 0; len(d.changes) < want && tries < 20; tries++ {
		m := mutations[g.r.IntN(len(mutations))]
		if m.apply(g, d) {
			d.changes = append(d.changes, m.name)
		}
	}
}

// someMember returns the index of a member of d's body object, -1 when
// there is none (no body, or a raw one).
func (g *generator) someMember(d *draft) int {
	if d.op.Body == nil || d.hasRaw || len(d.members) == 0 {
		return -1
	}
	return g.r.IntN(len(d.members))
}

func memberType(d *draft, i int) string {
	if s := d.op.Body.Properties[d.members[i].name]; s != nil {
		return s.mainType()
	}
	return ""
}

func mutateWrongType(g *generator, d *draft) bool {
	i := g.someMember(d)
	if i < 0 {
		return false
	}
	typ := memberType(d, i)
	var kinds []string
	for k := range wrongTyped {
		if k != typ && !(typ == "number" && k == "integer") {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	vs := wrongTyped[kinds[g.r.IntN(len(kinds))]]
	d.members[i].value = []byte(vs[g.r.IntN(len(vs))])
	return true
}

func mutateDropRequired(g *generator, d *draft) bool {
	if d.op.Body == nil || d.hasRaw {
		return false
	}
	for i, m := range d.members {
		if slices.Contains(d.op.Body.Required, m.name) {
			d.members = slices.Delete(d.members, i, i+1)
			return true
		}
	}
	return false
}

func mutateUnknownField(g *generator, d *draft) bool {
	if d.op.Body == nil || d.hasRaw {
		return false
	}
	name := pick(g.r, "unknown", "Kind", "kind ", "lease-token", "__proto__", "a\u0000b", "é", strings.Repeat("k", 300))
	d.members = append(d.members, member{name, []byte(pick(g.r, `1`, `"x"`, `null`, `{"nested":true}`))})
	return true
}

func mutateHostileString(g *generator, d *draft) bool {
	i := g.someMember(d)
	if i < 0 {
		return false
	}
	s := hostileStrings[g.r.IntN(len(hostileStrings))]
	switch memberType(d, i) {
	case "array":
		d.members[i].value = []byte("[" + s + "]")
	case "object", "":
		if g.r.IntN(2) == 0 {
			d.members[i].value = []byte(`{` + s + `:1}`) // as a key
		} else {
			d.members[i].value = []byte(`{"k":[` + s + `]}`)
		}
	default:
		d.members[i].value = []byte(s)
	}
	return true
}

func mutateHostileNumber(g *generator, d *draft) bool {
	i := g.someMember(d)
	if i < 0 {
		return false
	}
	n := hostileNumbers[g.r.IntN(len(hostileNumbers))]
	if memberType(d, i) == "" || memberType(d, i) == "object" {
		n = `{"n":` + n + `}`
	}
	d.members[i].value = []byte(n)
	return true
}

func mutateLongString(g *generator, d *draft) bool {
	i := g.someMember(d)
	if i < 0 {
		return false
	}
	// Around the limits: 255-byte keys, 64 KiB errors, 1 MiB args.
	size := pick(g.r, 129, 256, 300, 64<<10+1, 200<<10)
	if g.r.IntN(8) == 0 {
		size = 1 << 20
	}
	unit := pick(g.r, "x", "é", "😀")
	s := `"` + strings.Repeat(unit, size/len(unit)+1) + `"`
	switch memberType(d, i) {
	case "array":
		s = "[" + s + "]"
	case "object", "":
		s = `{"long":` + s + `}`
	}
	d.members[i].value = []byte(s)
	return true
}

func mutateDeepNesting(g *generator, d *draft) bool {
	depth := pick(g.r, 513, 600, 1001, 10000, 10001)
	open, close := "[", "]"
	if g.r.IntN(2) == 0 {
		open, close = `{"a":`, "}"
	}
	deep := strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth)
	if i := g.someMember(d); i >= 0 && g.r.IntN(3) != 0 {
		d.members[i].value = []byte(deep)
		return true
	}
	if d.op.Body == nil && !d.op.OpaqueBody {
		return false
	}
	d.raw, d.hasRaw, d.noBody = []byte(deep), true, false
	return true
}

func mutateWholeBody(g *generator, d *draft) bool {
	if d.op.Body == nil && !d.op.OpaqueBody && g.r.IntN(4) != 0 {
		return false // a body where none is expected, now and then
	}
	d.raw, d.hasRaw, d.noBody = []byte(wholeBodies[g.r.IntN(len(wholeBodies))]), true, false
	return true
}

func mutateDuplicateMember(g *generator, d *draft) bool {
	i := g.someMember(d)
	if i < 0 {
		return false
	}
	d.members = append(d.members, member{d.members[i].name, []byte(`"duplicate"`)})
	return true
}

func mutateContentType(g *generator, d *draft) bool {
	if d.noBody && g.r.IntN(2) == 0 {
		return false
	}
	if ct := wrongContentTypes[g.r.IntN(len(wrongContentTypes))]; ct != "" {
		d.header.Set("Content-Type", ct)
	} else {
		d.header.Del("Content-Type")
	}
	return true
}

func mutatePath(g *generator, d *draft) bool {
	names := pathParams(d.op.Path)
	if len(names) == 0 {
		return false
	}
	name := names[g.r.IntN(len(names))]
	var v string
	switch g.r.IntN(6) {
	case 0:
		v = strings.Repeat(pick(g.r, "a", "%C3%A9", "9"), pick(g.r, 256, 1000, 10000))
	case 1: // a UUID in another dress
		id := uuid.New()
		v = pick(g.r, strings.ToUpper(id.String()), strings.ReplaceAll(id.String(), "-", ""),
			"%7B"+id.String()+"%7D", "urn:uuid:"+id.String(), id.String()+"x", id.String()[:35])
	default:
		v = garbageIDs[g.r.IntN(len(garbageIDs))]
	}
	d.path[name] = v
	return true
}

func mutateQueryValue(g *generator, d *draft) bool {
	var qs []*param
	for _, p := range d.op.Params {
		if p.In == "query" {
			qs = append(qs, p)
		}
	}
	if len(qs) == 0 {
		return false
	}
	p := qs[g.r.IntN(len(qs))]
	var v string
	switch {
	case p.Name == "cursor" && g.r.IntN(2) == 0:
		v = garbageCursor(g)
	case (p.Name == "wait" || p.Name == "timeout") && g.r.IntN(10) != 0:
		// A duration that parses would hold the request: mostly not.
		v = pick(g.r, "x", "-1s", "%00", "1", "5", "1e3s", "%ff", "")
	default:
		v = garbageQuery[g.r.IntN(len(garbageQuery))]
	}
	pair := p.Name + "=" + v
	if g.r.IntN(4) == 0 && len(d.query) > 0 {
		d.query = append(d.query, pair) // repeated
	} else {
		d.query = []string{pair}
	}
	return true
}

// garbageCursor is a cursor the server never gave: base64url of the
// right mode bytes and lengths, or of anything.
func garbageCursor(g *generator) string {
	b := make([]byte, pick(g.r, 0, 1, 16, 17, 24, 25, 26, 40))
	for i := range b {
		b[i] = byte(g.r.IntN(256))
	}
	if len(b) > 0 {
		b[0] = pick(g.r, byte('n'), byte('f'), b[0])
	}
	if len(b) == 25 && g.r.IntN(2) == 0 {
		copy(b[17:], []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // the largest time
	}
	enc := base64.RawURLEncoding.EncodeToString(b)
	return pick(g.r, enc, enc+"=", strings.ReplaceAll(enc, "-", "+"), "%00"+enc)
}

func mutateQueryUnknown(g *generator, d *draft) bool {
	d.query = append(d.query, pick(g.r, "foo=bar", "status=queued", "a=1;b=2", "%00=1", "=", "&&", "x="+strings.Repeat("y", 5000)))
	return true
}

func mutateHeader(g *generator, d *draft) bool {
	switch g.r.IntN(4) {
	case 0:
		d.header.Set("X-Async", pick(g.r, "later", "TRUE", "store, true", "", "false", " store "))
	case 1:
		d.header.Set("X-Async", "true")
		d.header.Set("X-Arango-Async", "store")
	case 2:
		d.header.Set("Idempotency-Key", pick(g.r, strings.Repeat("k", 300), "é", "a b", strings.Repeat("é", 200)))
	default:
		d.header.Set("Accept", pick(g.r, "text/html", "application/xml", "*/*;q=0"))
	}
	return true
}

// ruleBreaking are values of the right JSON type that break a rule of
// most members: empty, control characters, over a length, negative.
var ruleBreaking = map[string][]string{
	"string":  {`""`, `" "`, `"a\u0001b"`, `"\t"`, `"` + strings.Repeat("q", 129) + `"`, `"` + strings.Repeat("é", 128) + `"`, `"\u007f"`, `"\u202e"`},
	"integer": {`-1`, `0`, `2147483647`, `-2147483648`, `1000001`},
	"number":  {`-1`, `0`, `1e11`, `-0.5`},
	"array":   {`[""]`, `["a","a"]`, `[null]`, `[` + strings.Repeat(`"x",`, 40) + `"x"]`, `[1]`},
	"object":  {`{"":null}`, `{"a":null}`, `[]`, `{"a":1,"a":2}`},
}

// edgeTimes and edgeDurations are well-formed values at the edges of
// what a time or a Go duration can be.
var (
	edgeTimes = []string{
		`"0000-01-01T00:00:00Z"`, `"0001-01-01T00:00:00Z"`, `"9999-12-31T23:59:59.999999999Z"`, `"1970-01-01T00:00:00Z"`,
		`"2024-02-29T12:00:00+14:00"`, `"2024-01-01T00:00:00-23:59"`, `"1969-12-31T23:59:59.999999999Z"`,
	}
	edgeDurations = []string{`"0s"`, `"1ns"`, `"-1s"`, `"2562047h47m16.854775807s"`, `"999999h"`, `"1s"`, `"0.5s"`}
)

func mutateRuleBreaking(g *generator, d *draft) bool {
	i := g.someMember(d)
	if i < 0 {
		return false
	}
	switch s := d.op.Body.Properties[d.members[i].name]; {
	case s != nil && s.Format == "date-time":
		d.members[i].value = []byte(edgeTimes[g.r.IntN(len(edgeTimes))])
		return true
	case d.members[i].name == "lease_ttl" || d.members[i].name == "wait":
		d.members[i].value = []byte(edgeDurations[g.r.IntN(len(edgeDurations))])
		return true
	}
	vs := ruleBreaking[memberType(d, i)]
	if len(vs) == 0 {
		vs = ruleBreaking["object"]
	}
	d.members[i].value = []byte(vs[g.r.IntN(len(vs))])
	return true
}

func mutateCredential(g *generator, d *draft) bool {
	if g.r.IntN(3) != 0 {
		return false // a wrong credential stops the request at the door: now and then only
	}
	all := g.creds.all()
	d.cred = all[g.r.IntN(len(all))]
	return true
}

// describe summarises a draft for a message.
func (d *draft) describe() string {
	return fmt.Sprintf("%s (%s; mutations: %s)", d.op, d.cred.label, strings.Join(d.changes, ", "))
}
