package surface_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// operation is one operation of the served OpenAPI document.
type operation struct {
	ID           string
	Method, Path string // Path is the template: /api/v1/jobs/{id}
	// Scope is the declared security's scope; "" for a public operation.
	Scope string
	// QueueScoped: the operation is one queue's jobs, which a key limited
	// to queues may use (x-jobd-queue-scoped).
	QueueScoped bool
	Params      []*param
	// Body is the JSON request body's schema; nil when the operation
	// takes none. OpaqueBody: any bytes (the gateway forwards them).
	Body         *schema
	BodyRequired bool
	OpaqueBody   bool
	// ProblemMembers are the members every problem answer of the
	// operation carries besides the RFC 9457 ones: the required members
	// of the schema its path item names in x-problem-members (the
	// gateway's ArangoDB routes: ArangoError).
	ProblemMembers []string
}

func (op *operation) String() string { return op.Method + " " + op.Path }

// param is a path, query or header parameter.
type param struct {
	Name     string  `json:"name"`
	In       string  `json:"in"`
	Required bool    `json:"required"`
	Schema   *schema `json:"schema"`
}

// schema is the part of a JSON Schema the generator reads.
type schema struct {
	Ref        string             `json:"$ref"`
	Type       json.RawMessage    `json:"type"` // "string" or ["string","null"]
	Format     string             `json:"format"`
	Enum       []json.RawMessage  `json:"enum"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
	Items      *schema            `json:"items"`
	Minimum    *float64           `json:"minimum"`
	Maximum    *float64           `json:"maximum"`
	Example    json.RawMessage    `json:"example"`
}

// types returns the schema's JSON types; none for "any".
func (s *schema) types() []string {
	if s == nil || len(s.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(s.Type, &many)
	return many
}

// mainType is the schema's first type other than null; "" for any.
func (s *schema) mainType() string {
	for _, t := range s.types() {
		if t != "null" {
			return t
		}
	}
	if s != nil && len(s.Properties) > 0 {
		return "object"
	}
	return ""
}

// spec is the served document's operations.
type spec struct {
	Ops []*operation
}

// parseSpec reads an OpenAPI 3.1 document: every operation with its
// declared scope, parameters and JSON body, $refs resolved.
func parseSpec(doc []byte) (*spec, error) {
	var raw struct {
		Security   []map[string][]string `json:"security"`
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Schemas map[string]*schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	resolve := func(s *schema) (*schema, error) { return resolveSchema(s, raw.Components.Schemas, 0) }
	sp := &spec{}
	paths := make([]string, 0, len(raw.Paths))
	for p := range raw.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, path := range paths {
		var members []string
		if rawMembers, ok := raw.Paths[path]["x-problem-members"]; ok {
			var ref *schema
			if err := json.Unmarshal(rawMembers, &ref); err != nil {
				return nil, fmt.Errorf("openapi: %s x-problem-members: %w", path, err)
			}
			m, err := resolve(ref)
			if err != nil || m == nil || len(m.Required) == 0 {
				return nil, fmt.Errorf("openapi: %s x-problem-members names no schema with required members (%v)", path, err)
			}
			members = m.Required
		}
		for method, rawOp := range raw.Paths[path] {
			switch method {
			case "get", "put", "post", "delete", "patch":
			default:
				continue
			}
			var o struct {
				OperationID string                 `json:"operationId"`
				QueueScoped bool                   `json:"x-jobd-queue-scoped"`
				Security    *[]map[string][]string `json:"security"`
				Parameters  []*param               `json:"parameters"`
				RequestBody *struct {
					Required bool                                `json:"required"`
					Content  map[string]struct{ Schema *schema } `json:"content"`
				} `json:"requestBody"`
			}
			if err := json.Unmarshal(rawOp, &o); err != nil {
				return nil, fmt.Errorf("openapi: %s %s: %w", method, path, err)
			}
			op := &operation{ID: o.OperationID, Method: strings.ToUpper(method), Path: path, QueueScoped: o.QueueScoped, ProblemMembers: members}
			sec := raw.Security
			if o.Security != nil {
				sec = *o.Security
			}
			switch {
			case len(sec) == 0:
			case len(sec) == 1 && len(sec[0]["bearer"]) == 1:
				op.Scope = sec[0]["bearer"][0]
			default:
				return nil, fmt.Errorf("openapi: %s: security %v does not name one bearer scope", op, sec)
			}
			for _, p := range o.Parameters {
				var err error
				if p.Schema, err = resolve(p.Schema); err != nil {
					return nil, err
				}
				op.Params = append(op.Params, p)
			}
			if rb := o.RequestBody; rb != nil {
				op.BodyRequired = rb.Required
				if c, ok := rb.Content["application/json"]; ok {
					var err error
					if op.Body, err = resolve(c.Schema); err != nil {
						return nil, err
					}
					if op.Body == nil {
						op.Body = &schema{}
					}
				} else {
					op.OpaqueBody = true
				}
			}
			sp.Ops = append(sp.Ops, op)
		}
	}
	sort.Slice(sp.Ops, func(i, j int) bool { return sp.Ops[i].String() < sp.Ops[j].String() })
	return sp, nil
}

// resolveSchema returns s with its $refs replaced by the schemas they name.
func resolveSchema(s *schema, defs map[string]*schema, depth int) (*schema, error) {
	if s == nil {
		return nil, nil
	}
	if depth > 20 {
		return nil, fmt.Errorf("openapi: $ref nesting too deep")
	}
	if s.Ref != "" {
		name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/")
		if !ok || defs[name] == nil {
			return nil, fmt.Errorf("openapi: unknown $ref %q", s.Ref)
		}
		return resolveSchema(defs[name], defs, depth+1)
	}
	out := *s
	out.Properties = nil
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]*schema, len(s.Properties))
		for k, v := range s.Properties {
			r, err := resolveSchema(v, defs, depth+1)
			if err != nil {
				return nil, err
			}
			out.Properties[k] = r
		}
	}
	var err error
	if out.Items, err = resolveSchema(s.Items, defs, depth+1); err != nil {
		return nil, err
	}
	return &out, nil
}

// pathParams returns the names of a path template's parameters, in order.
func pathParams(template string) []string {
	var names []string
	for rest := template; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(rest[i:], '}')
		names = append(names, rest[i+1:i+j])
		rest = rest[i+j:]
	}
}

// fetchSpec reads the node's own /openapi.json over HTTP, without a
// credential (it is public).
func (n *node) fetchSpec() *spec {
	n.t.Helper()
	a, err := n.send(request{method: "GET", path: "/openapi.json", noBody: true}, 30*time.Second)
	if err != nil {
		n.t.Fatal(err)
	}
	if a.status != 200 {
		n.t.Fatalf("GET /openapi.json: %d %s", a.status, a.body)
	}
	sp, err := parseSpec(a.body)
	if err != nil {
		n.t.Fatal(err)
	}
	if len(sp.Ops) < 50 {
		n.t.Fatalf("the served document has %d operations; expected every route", len(sp.Ops))
	}
	return sp
}
