// Package surface holds tests of jobd's whole HTTP surface, as `jobd
// serve` composes it (the API, the async gateway's /gw/, /_api/job/ and
// /api/v1/async/ routes, durable processes) over real SQLite and
// PostgreSQL stores, with authentication on:
//
//   - an auth matrix, every operation of the served OpenAPI document ×
//     {no credential, a malformed one, a wrong key, a revoked key, each
//     scope's key, a key limited to queues, a worker's key, a worker
//     registered with queues, a disabled worker's key, the admin secret}:
//     401 or 403 exactly when the operation's declared scope is not
//     granted (or, for the key limited to queues, when the operation is
//     not marked x-jobd-queue-scoped), decided before any store call but
//     the credential's lookup;
//   - a fuzz test driven by the served OpenAPI document, which sends
//     every operation mutated bodies, path and query parameters and
//     headers, and checks that nothing answers 5xx, that every 4xx is a
//     problem document of a known kind, that a refused write changed
//     nothing in the database and that no secret reaches an answer or a
//     log line.
//
// The package has no code of its own: everything is in its tests. The
// fuzz test's budget is JOBD_FUZZ_REQUESTS requests per store (its seed
// is printed; -fuzzseed or JOBD_FUZZ_SEED replays one); docs/development.md says how
// to run a long fuzz.
package surface
