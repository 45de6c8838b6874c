// Package storetest is the conformance suite every store.Store driver runs:
// the rules of the Store interface's doc comments and of docs/design.md,
// written once. A driver calls Run from its TestConformance. The package
// imports testing and is for tests only; production code must not import it.
package storetest

import (
	"testing"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store"
)

// Opener returns a migrated store on a fresh, empty database, using c as its
// clock; it registers its own cleanup with t.
type Opener = func(t *testing.T, c clock.Clock) store.Store

// NodeOpener returns another store on the database of s, a store an
// Opener returned, with s's clock: another node sharing its database
// (its own connections, its own view of anything a driver keeps in
// memory); it registers its own cleanup with t.
type NodeOpener = func(t *testing.T, s store.Store) store.Store

// test is one conformance test; it gets a store of its own.
type test struct {
	name string
	fn   func(t *testing.T, e *env)
}

// Run runs every conformance test against stores made by open. open returns a
// migrated store on a fresh, empty database, using c as its clock; it
// registers its own cleanup with t. node opens another node on the
// database of a store open made (see NodeOpener).
//
// Tests are grouped by area (Insert, Claim, Finish, ...) and run in parallel,
// each on its own store, so a single rule can be run with
// go test -run 'TestConformance/Claim/Order'.
func Run(t *testing.T, open Opener, node NodeOpener) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Insert", insertTests},
		{"Idempotency", idempotencyTests},
		{"Claim", claimTests},
		{"LockKey", lockTests},
		{"Fencing", fencingTests},
		{"Lease", leaseTests},
		{"Finish", finishTests},
		{"Repeat", repeatTests},
		{"Progress", progressTests},
		{"Cancel", cancelTests},
		{"Retry", retryTests},
		{"Rerun", rerunTests},
		{"Rescue", rescueTests},
		{"TimeOut", timeoutTests},
		{"Journal", journalTests},
		{"Prune", pruneTests},
		{"Take", takeTests},
		{"List", listTests},
		{"Queue", queueTests},
		{"Leader", leaderTests},
		{"Wakeup", wakeupTests},
		{"Key", keyTests},
		{"Session", sessionTests},
		{"Worker", workerTests},
		{"Process", processTests},
		{"Schedule", scheduleTests},
		{"Tx", txTests},
		{"Health", healthTests},
		{"Webhook", webhookTests},
		{"Throughput", throughputTests},
		{"Flow", flowTests},
		{"FlowThrottle", flowThrottleTests},
		{"FlowNodes", flowNodeTests},
		{"FlowWake", flowWakeTests},
		{"FlowRules", flowRuleTests},
		{"Workflow", workflowTests},
		{"WorkflowRules", workflowRuleTests},
		{"WorkflowConcurrent", workflowConcurrentTests},
		{"Durable", durableTests},
		{"Children", childrenTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.fn(t, newEnv(t, open, node))
				})
			}
		})
	}
}
