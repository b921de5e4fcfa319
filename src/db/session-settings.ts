// Settings every pooled connection of the service starts its session with (pg's `options`, sent in
// the startup packet, so no statement is spent on them and a reconnect gets them again).
//
// jit=off: the service's statements are short index reads and writes. PostgreSQL compiles a
// statement with LLVM when the planner's cost estimate passes jit_above_cost, and a prepared
// statement's generic plan (estimates without the values) passes it easily: on PostgreSQL 15 with
// JIT available, one page of a view's feed spent about 1,000 ms compiling and under 2 ms running,
// so under load it missed the read deadline. Builds without LLVM (the embedded server) never JIT.
//
// client_connection_check_interval=250ms: a statement whose connection this process closed (a
// cancelled read whose backend was not idle within CANCEL_GIVE_UP_MS: db/deadline-reads.ts, or a
// process gone) stops within a quarter second instead of running on to its statement timeout, unseen by
// the query class's limits. PostgreSQL 14 or later; a poll of the socket during a statement.

/** The `options` of a pg connection for the service's pools. */
export const SESSION_OPTIONS = '-c jit=off -c client_connection_check_interval=250';

// max_parallel_workers_per_gather=0, for the query class only (query-pool.ts): its admission limits
// (QUERY_MAX_CONCURRENT, per key) count statements, and each statement of a heavy search could add
// two parallel workers beside its own backend: five admitted searches over 900,000 matches at a
// million records kept 14 processes busy on 2 cores, and another key's plain reads waited for CPU
// (p99 from 10 to 700 ms). Without them an admitted statement is one backend, one core at most. No
// row of bench:query but one (11 ms) had a parallel plan.

/** The `options` of the query class's connections: the service's, and no parallel workers. */
export const QUERY_SESSION_OPTIONS = `${SESSION_OPTIONS} -c max_parallel_workers_per_gather=0`;
