package httpapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
)

// TestQueueBodiesMirrorWireTypes: the server's decoding structs of a
// queue's limits accept exactly the members of the api types.
func TestQueueBodiesMirrorWireTypes(t *testing.T) {
	for _, c := range []struct{ server, wire any }{
		{limitsBody{}, api.QueueLimits{}},
		{rateBody{}, api.QueueRate{}},
	} {
		if got, want := jsonNames(c.server), jsonNames(c.wire); !reflect.DeepEqual(got, want) {
			t.Errorf("%T members %v, %T members %v", c.server, got, c.wire, want)
		}
	}
}

// TestOpenAPIQueueSchemas: the schemas of a queue and of its limits have
// exactly the members of the api wire types (a queue's limits sit among
// its own members).
func TestOpenAPIQueueSchemas(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for name, want := range map[string][]string{
		"Queue":             flatJSONNames(api.Queue{}),
		"QueueLimits":       jsonNames(api.QueueLimits{}),
		"QueueRate":         jsonNames(api.QueueRate{}),
		"PartitionThrottle": jsonNames(api.PartitionThrottle{}),
	} {
		var got []string
		for p := range doc.Components.Schemas[name].Properties {
			got = append(got, p)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("schema %s has %v, the wire type %v", name, got, want)
		}
	}
}

// flatJSONNames is jsonNames with the members of embedded structs in
// place of theirs.
func flatJSONNames(v any) []string {
	var names []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Anonymous {
			names = append(names, flatJSONNames(reflect.Zero(f.Type).Interface())...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
