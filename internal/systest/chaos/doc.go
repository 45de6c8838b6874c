// Package chaos is jobd's chaos test tier (issue 10). Its one test,
// TestChaos, runs three `jobd serve` nodes on one PostgreSQL cluster of
// its own, with remote workers (`jobd worker --exec` processes and Go SDK
// workers) and a submitting load, while it injects faults on a schedule
// drawn from a seed: nodes SIGKILLed and restarted every few seconds, an
// immediate PostgreSQL restart, bursts of pg_terminate_backend on every
// jobd session, connection exhaustion, a transaction pinning the vacuum
// horizon, workers that vanish (SIGKILL), hang past their leases
// (SIGSTOP, or cut off from the network) or shut down. Workflows (issue
// 28: fan-outs with their fan-in and diamonds, some failing in the
// middle, each with a cleanup that runs on any end) are folded into the
// load, submitted straight into the store on the nodes' database
// (workflow_test.go). Once the faults stop and the cluster drains, it
// proves from the workers' own records and the journal that every job
// finished as it was meant to, that each had exactly one accepted
// completion, that no two executions under one lock_key overlapped,
// and that nothing stayed running past its lease plus the reaper
// interval (and a stated slack) after the faults stopped; and from the
// database's record of every transition (with its transaction) that
// each workflow and task ended as the rules say, each dependent was
// released (or canceled) once, in the transaction of a dependency's
// end, and no task was claimed or run before its dependencies ended
// (workflow_check_test.go); then it prints its figures.
//
// Everything lives in the test files; this file only names the package.
// The seed is printed at the start and in every failure:
//
//	go test ./internal/chaos                                      # the short run of CI
//	JOBD_CHAOS_DURATION=15m go test ./internal/chaos -run TestChaos -v -timeout 30m
//	JOBD_CHAOS_SEED=N go test ./internal/chaos -run TestChaos -v   # the same faults and jobs again
//
// JOBD_CHAOS_RATE sets the jobs submitted a second (35 by default).
//
// A failed run keeps its logs and records (and any run, with
// JOBD_CHAOS_KEEP=1) in the directory it names.
package chaos
