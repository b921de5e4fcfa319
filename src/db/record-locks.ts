// A catalog record's advisory lock: every catalog write holds those of its records from its fan-out
// to its commit (catalog/catalog-writes.ts), and whatever must see a record's lanes as its writers
// leave them takes it too (a catch-up's or resync's batch, a replay). Keyed by the id as text in the
// one-key space (db/routing-lock.ts keeps to the two-key one); several are taken in the order of the
// ids as text, so that no two transactions wait for each other.

/** The statement expression taking the lock of the record whose id (as text) is `idText`. */
export const recordLockSql = (idText: string) => `pg_advisory_xact_lock(hashtextextended(${idText}, 0))`;
