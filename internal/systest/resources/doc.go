// Package resources is jobd's resource test tier (issue 25): its one
// test, TestResourcesBounded, starts a real `jobd serve` (built from this
// checkout, without -race: the binary that ships) on SQLite and on
// PostgreSQL, holds the server's limits small (read, write and idle
// timeouts of a few seconds, 8 event streams, 4 per key) and drives the
// four ways a client can pin a server's resources:
//
//   - slow readers: clients that ask for GET /api/v1/jobs?limit=200 of
//     jobs with 1 MiB args and stop reading;
//   - idle connections: connections that send nothing, and kept-alive
//     ones that send no next request;
//   - slow bodies: requests whose body comes a byte a second;
//   - many streams: job event streams past the caps of a key and of the
//     node.
//
// For each it reads the process's peak resident memory (VmHWM of
// /proc/PID/status, reset before the case), its open file descriptors
// (/proc/PID/fd) and its goroutines (go_goroutines of its own /metrics),
// and holds them to bounds derived from the limits, never to a time:
// every wait is on a state, with a generous deadline. It prints the
// figures (go test -v). JOBD_RESOURCES_BIN runs it against another jobd
// binary (an older one, to measure what the limits changed); the
// settings go through JOBD_* environment variables, which an older
// binary ignores where it lacks the flag.
//
// Everything lives in the test files; this file only names the package.
package resources
