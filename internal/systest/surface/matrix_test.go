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

// credentialLookups are the store calls authentication makes: the key by
// its prefix, and a worker key's worker (to refuse a disabled one).
var credentialLookups = []string{"KeyByPrefix", "WorkerGet"}

// TestAuthMatrix: every operation of the served OpenAPI document (the
// API's and the gateway's) × every kind of credential answers 401 with
// WWW-Authenticate (no valid credential) or 403 (a valid one without the
// declared scope) exactly when the declared scope is not granted, and
// such a refusal is decided before anything is read or written: the
// request made no store call but the credential's lookup, and the
// database is as it was. The operations and their scopes come from the
// server's own document (held to the route table by httpapi's
// TestOpenAPIScopesMatchRoutes), never from a list in this test.
func TestAuthMatrix(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		n := startNode(t, driver)
		sp := n.fetchSpec()
		g := &generator{r: rand.New(rand.NewPCG(10, 10)), creds: n.creds}
		refused := 0
		for _, op := range sp.Ops {
			for _, cred := range n.creds.all() {
				d := g.valid(op)
				d.cred = cred
				req := d.render()
				before, err := n.fingerprint(nil)
				if err != nil {
					t.Fatal(err)
				}
				a, err := n.send(req, 30*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				what := op.String() + " with " + cred.label
				if a.held {
					t.Errorf("%s: no answer", what)
					continue
				}
				if passes(op, cred) {
					if a.status == 401 || a.status == 403 || (a.status >= 500 && !taskTimeout(op, a)) {
						t.Errorf("%s (scope %q): status %d: %s", what, op.Scope, a.status, a.body)
					}
					continue
				}
				refused++
				want, typ := 403, api.ProblemForbidden
				if cred.invalid {
					want, typ = 401, api.ProblemUnauthorized
				}
				if a.status != want {
					t.Errorf("%s (scope %q): status %d, want %d: %s", what, op.Scope, a.status, want, a.body)
					continue
				}
				var p api.Problem
				if a.header.Get("Content-Type") != api.ProblemContentType || json.Unmarshal(a.body, &p) != nil || p.Type != typ {
					t.Errorf("%s: not a %s problem: %s %s", what, typ, a.header.Get("Content-Type"), a.body)
				}
				if want == 401 && !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: 401 without WWW-Authenticate: Bearer", what)
				}
				for _, c := range a.calls {
					if !slices.Contains(credentialLookups, c) {
						t.Errorf("%s: refused after the store call %s (calls %v)", what, c, a.calls)
					}
				}
				after, err := n.fingerprint(nil)
				if err != nil {
					t.Fatal(err)
				}
				if diff := before.diff(after); diff != "" {
					t.Errorf("%s: refused, yet the database changed: %s", what, diff)
				}
			}
		}
		t.Logf("%s: %d operations × %d credentials, %d refused", driver, len(sp.Ops), len(n.creds.all()), refused)
	})
}

// taskTimeout reports whether a is a process task's 504 task-timeout,
// which says the task goes on (the call's ?timeout= passed), not a fault.
func taskTimeout(op *operation, a *answer) bool {
	if a.status != 504 || !strings.HasPrefix(op.Path, "/api/v1/processes/") {
		return false
	}
	var p api.Problem
	return json.Unmarshal(a.body, &p) == nil && p.Type == api.ProblemTaskTimeout
}
