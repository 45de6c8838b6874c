package httpapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	"github.com/jobd/jobd/api"
)

// TestScheduleBodiesMirrorWireTypes: the server's decoding structs of a
// schedule accept exactly the members of the api request types.
func TestScheduleBodiesMirrorWireTypes(t *testing.T) {
	for _, c := range []struct{ server, wire any }{
		{scheduleBody{}, api.ScheduleRequest{}},
		{scheduleJobBody{}, api.ScheduleJob{}},
	} {
		if got, want := jsonNames(c.server), jsonNames(c.wire); !reflect.DeepEqual(got, want) {
			t.Errorf("%T members %v, %T members %v", c.server, got, c.wire, want)
		}
	}
}

// TestOpenAPIWireSchemas: the schemas of the job, the schedules and the
// rerun have exactly the members of the api wire types.
func TestOpenAPIWireSchemas(t *testing.T) {
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
	for name, wire := range map[string]any{
		"Job": api.Job{}, "SubmitRequest": api.SubmitRequest{}, "Schedule": api.Schedule{},
		"ScheduleRequest": api.ScheduleRequest{}, "ScheduleJob": api.ScheduleJob{},
		"ScheduleList": api.ScheduleList{}, "RerunRequest": api.RerunRequest{},
	} {
		var got []string
		for p := range doc.Components.Schemas[name].Properties {
			got = append(got, p)
		}
		sort.Strings(got)
		if want := jsonNames(wire); !reflect.DeepEqual(got, want) {
			t.Errorf("schema %s has %v, %T has %v", name, got, wire, want)
		}
	}
}
