// Package pgprod is jobd's production PostgreSQL tier (issue 30): what a
// deployment meets past one node on one database, tested with real parts.
//
//   - TestFailover: two local clusters, a primary and its synchronous
//     standby (pg_basebackup, synchronous_standby_names); `jobd serve`
//     nodes given both hosts with target_session_attrs=read-write; jobs
//     submitted through the nodes while the primary is killed and the
//     standby promoted. Every acknowledged job exists afterwards, none
//     finished twice, every one succeeded.
//   - TestPgBouncer, TestServeBehindPgBouncer: a real PgBouncer in
//     transaction pooling mode, default settings, in front of the test
//     cluster; jobd detects it, keeps nothing in a session, and LISTENs on
//     --listen-database or falls back to polling.
//   - TestLeaderHandOver: three `jobd serve` nodes with a 1 s schedule; a
//     node SIGKILLed every 4 s (the leader every other time); no tick is
//     missed, none runs twice.
//   - TestRestartPickup: an immediate PostgreSQL restart under a waiting
//     engine; the claim that failed while the server was away is retried
//     the moment the listener is back, not after its backoff.
//   - TestBenchNodes: `jobd bench --mode nodes` on a small backlog.
//
// Everything lives in the test files; this file only names the package.
// All of it runs in CI (`go test ./...`: 47 s under -race on two cores,
// the tests two at a time, plus the -race build of jobd).
// JOBD_PGPROD_LONG=1 lengthens the hand-over run to 60 s and the
// failover's load to 35 s:
//
//	JOBD_PGPROD_LONG=1 go test ./internal/pgprod -v -run 'TestLeaderHandOver|TestFailover'
//
// The tests fail, never skip, when PostgreSQL's binaries (initdb,
// pg_basebackup, pg_ctl) or pgbouncer are missing.
package pgprod
