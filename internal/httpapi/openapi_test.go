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
		if servedByGateway(ops) {
			continue
		}
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

// servedByGateway reports whether a path item is one of the async
// gateway's routes (/gw/, /_api/job/), which the gateway serves beside
// this handler.
func servedByGateway(item map[string]json.RawMessage) bool {
	return string(item["x-jobd-served-by"]) == `"gateway"`
}

// TestOpenAPIScopesMatchRoutes: each operation's declared security is
// its route's scope ("bearer" with that scope, none for a public route),
// so that a client, and the auth matrix test that reads the served
// document, know what every route needs. (The gateway's routes are held
// to their declared scopes by that matrix, internal/systest/surface.)
func TestOpenAPIScopesMatchRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	type operation struct {
		Security *[]map[string][]string `json:"security"`
	}
	declared := func(path, method string) (string, bool) {
		var op operation
		if err := json.Unmarshal(doc.Paths[path][strings.ToLower(method)], &op); err != nil || op.Security == nil {
			return "", false
		}
		switch sec := *op.Security; {
		case len(sec) == 0:
			return "", true
		case len(sec) == 1 && len(sec[0]) == 1 && len(sec[0]["bearer"]) == 1:
			return sec[0]["bearer"][0], true
		}
		return "", false
	}
	for _, rt := range (&server{}).routes() {
		got, ok := declared(rt.path, rt.method)
		if !ok || got != string(rt.scope) {
			t.Errorf("%s declares security %q (%v), its route needs %q", rt.pattern(), got, ok, rt.scope)
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
		{heartbeatBody{}, api.HeartbeatRequest{}},
		{leaseBody{}, api.Lease{}},
		{progressBody{}, api.ProgressRequest{}},
		{checkpointBody{}, api.CheckpointRequest{}},
		{completeBody{}, api.CompleteRequest{}},
		{failBody{}, api.FailRequest{}},
		{releaseBody{}, api.ReleaseRequest{}},
		{outcomesBody{}, api.OutcomesRequest{}},
		{outcomeBody{}, api.OutcomeItem{}},
		{batchBody{}, api.SubmitBatchRequest{}},
		{stepBody{}, api.StepRequest{}},
		{childrenBody{}, api.ChildrenRequest{}},
		{waitBody{}, api.WaitRequest{}},
		{signalBody{}, api.SignalRequest{}},
		{workflowBody{}, api.WorkflowRequest{}},
		{taskBody{}, api.WorkflowTaskRequest{}},
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

// TestOpenAPIProblemKinds holds the document's problem kinds, and the
// Problem schema's types, to the table the server answers by.
func TestOpenAPIProblemKinds(t *testing.T) {
	type kind struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
		Title  string `json:"title"`
		Class  string `json:"class"`
	}
	var doc struct {
		Components struct {
			Kinds struct {
				Kinds []kind `json:"kinds"`
			} `json:"x-problem-kinds"`
			Schemas struct {
				Problem struct {
					Properties struct {
						Type struct {
							Enum []string `json:"enum"`
						} `json:"type"`
					} `json:"properties"`
				} `json:"Problem"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	var want []kind
	var types []string
	for _, k := range api.ProblemKinds() {
		want = append(want, kind{k.Type, k.Status, k.Title, string(k.Class)})
		types = append(types, k.Type)
	}
	if got := doc.Components.Kinds.Kinds; !reflect.DeepEqual(got, want) {
		t.Errorf("x-problem-kinds %v, want %v", got, want)
	}
	if got := doc.Components.Schemas.Problem.Properties.Type.Enum; !reflect.DeepEqual(got, types) {
		t.Errorf("Problem.type enum %v, want %v", got, types)
	}
}

// TestOpenAPIProcessSchemas: the process schemas, and those of the worker
// protocol and the batch submit, have exactly the members of the api
// wire types the server encodes.
func TestOpenAPIProcessSchemas(t *testing.T) {
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
		"ProcessTaskRequest": api.ProcessTaskRequest{}, "Process": api.Process{},
		"ProcessList": api.ProcessList{}, "ProcessTaskAnswer": api.ProcessTaskAnswer{},
		// The worker protocol's and the batch submit's.
		"ClaimRequest": api.ClaimRequest{}, "HeartbeatRequest": api.HeartbeatRequest{},
		"HeartbeatResponse": api.HeartbeatResponse{}, "ProgressRequest": api.ProgressRequest{},
		"ProgressResponse": api.ProgressResponse{}, "CheckpointRequest": api.CheckpointRequest{},
		"CheckpointResponse": api.CheckpointResponse{}, "CompleteRequest": api.CompleteRequest{},
		"FailRequest": api.FailRequest{}, "ReleaseRequest": api.ReleaseRequest{},
		"FinishResponse": api.FinishResponse{}, "OutcomesRequest": api.OutcomesRequest{},
		"OutcomeItem": api.OutcomeItem{}, "OutcomesResponse": api.OutcomesResponse{},
		"OutcomeAnswer": api.OutcomeAnswer{}, "SubmitBatchRequest": api.SubmitBatchRequest{},
		"SubmitBatchResponse": api.SubmitBatchResponse{}, "SubmitBatchItem": api.SubmitBatchItem{},
		"Status": api.Status{},
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

// TestOpenAPIQueueScopedMatchesRoutes: an operation is marked
// x-jobd-queue-scoped exactly when its route is one of queueRoutes (the
// routes a key limited to queues may use), and every one of queueRoutes
// is served, so that the auth matrix, which reads the mark, knows them.
func TestOpenAPIQueueScopedMatchesRoutes(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	served := map[string]bool{}
	for _, rt := range (&server{}).routes() {
		served[rt.pattern()] = true
		var op struct {
			Scoped bool `json:"x-jobd-queue-scoped"`
		}
		if err := json.Unmarshal(doc.Paths[rt.path][strings.ToLower(rt.method)], &op); err != nil {
			t.Fatalf("%s: %v", rt.pattern(), err)
		}
		if op.Scoped != rt.queueScoped() {
			t.Errorf("%s: x-jobd-queue-scoped %v, its route's %v", rt.pattern(), op.Scoped, rt.queueScoped())
		}
	}
	for p := range queueRoutes {
		if !served[p] {
			t.Errorf("queueRoutes names %s, which is not a route", p)
		}
	}
}
