// Writers and changes of a receiver's view, serialised: a catalog write routes its events to receivers
// by their views as it reads them (webhooks/delivery/fan-out.ts), and a view change finds the records
// whose membership differs from the catalog as it reads it (webhooks/catch-up/view-change.ts). A
// write that routed by the view before and committed after the change looked would be sent as the
// old view has it and never corrected (a record it moved out of the new view stayed at the receiver).
// So every catalog write holds this advisory lock shared, from its records' locks to its commit, and
// a view change takes it exclusive first: it waits for the writes under way, and the writes after it
// wait for its commit and read the new view. Writers never wait for each other on it. The two-key
// form: a key space of its own, apart from the records' one-key locks.
export const ROUTING_LOCK_KEY = `hashtext('receiver_views'), 0`;

/** Taken by a change of a receiver's view, first in its transaction. */
export const ROUTING_LOCK_EXCLUSIVE_SQL = `select pg_advisory_xact_lock(${ROUTING_LOCK_KEY})`;
