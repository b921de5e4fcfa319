// Settings every pooled connection of the service starts its session with (pg's `options`, sent in
// the startup packet, so no statement is spent on them and a reconnect gets them again).
//
// jit=off: the service's statements are short index reads and writes. PostgreSQL compiles a
// statement with LLVM when the planner's cost estimate passes jit_above_cost, and a prepared
// statement's generic plan (estimates without the values) passes it easily: on PostgreSQL 15 with
// JIT available, one page of a view's feed spent about 1,000 ms compiling and under 2 ms running,
// so under load it missed the read deadline. Builds without LLVM (the embedded server) never JIT.

/** The `options` of a pg connection for the service's pools. */
export const SESSION_OPTIONS = '-c jit=off';
