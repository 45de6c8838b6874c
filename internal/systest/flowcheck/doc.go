// Package flowcheck holds the end-to-end tests of flow control (package
// flow) on PostgreSQL: three jobd nodes, each an engine with a connection
// pool and a node name of its own, and two remote workers over HTTP,
// claiming one queue at once, with the handlers themselves observing how
// many run at any instant, how fast they start, and what a throttle stops.
package flowcheck
