// Package durable tests durable execution (docs/steps-and-children.md)
// with real parts: `jobd serve` subprocesses, SIGKILLed, on SQLite (one
// node, restarted on its file) and PostgreSQL (two nodes on one
// database), their jobs run by Go SDK workers in the test process.
//
//   - TestStepCrash: a node killed between a step's work and its record
//     re-runs only that step (the steps before it return their records).
//   - TestParentSurvivesKill: a parent of 100 children, the node killed
//     while it waits, ends with the right sum, no child spawned twice.
//   - TestSignalAcrossNodes (PostgreSQL): a signal sent through one node
//     wakes a job waiting on a worker of the other, by the NOTIFY path
//     (the node's poll is an hour), and the latency is logged.
//
// Everything lives in the test files; this file only names the package.
package durable
