package httpapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
)

// TestOpenAPIMatchesRoutes holds openapi.json and the route table to
// each other: every documented path and method is served, and every
// served one is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	served := map[string]bool{}
	for _, rt := range (&server{}).routes() {
		served[rt.pattern()] = true
	}
	for _, p := range sortedKeys(documented) {
		if !served[p] {
			t.Errorf("documented but not served: %s", p)
		}
	}
	for _, p := range sortedKeys(served) {
		if !documented[p] {
			t.Errorf("served but not documented: %s", p)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestBodiesMirrorWireTypes: the server's decoding structs accept exactly
// the members of the api request types.
func TestBodiesMirrorWireTypes(t *testing.T) {
	for _, c := range []struct{ server, wire any }{
		{submitBody{}, api.SubmitRequest{}},
		{triggerBody{}, api.TriggerRequest{}},
	} {
		got, want := jsonNames(c.server), jsonNames(c.wire)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T members %v, %T members %v", c.server, got, c.wire, want)
		}
	}
}

func jsonNames(v any) []string {
	var names []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
