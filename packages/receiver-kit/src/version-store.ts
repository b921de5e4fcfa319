// Applying events in order: every event carries `resource.version`, strictly greater than every
// earlier event's of the same resource id (a re-created id goes on from where it stopped). A receiver
// keeps the last version it applied per resource and applies an event only when it is newer, so a
// retried or replayed old delivery can never overwrite newer state, bring a deleted record back or
// remove a re-published one. The service delivers each record's events in order and a receiver's
// copy converges without this check too (docs/contract.md, "Delivery guarantees"), but at-least-once delivery, an
// operator's `--include-superseded` replay or a repair from the feed racing live deliveries still
// hand a receiver old events: the check makes them harmless.
//
//   const versions = new MemoryVersionStore();          // or FileVersionStore, or your own table
//   const outcome = await applyEvent(versions, event, (e) => upsertOrRemove(e));
//   // outcome.applied === false: not newer than what is held; acknowledge and drop it
//
// VersionStore is small enough for a database table (resource_id primary key, version, deleted_at:
// an upsert `where excluded.version > version`) or a Redis hash. Deleted records (and records that
// left a receiver's view: LEFT_VIEW) are kept as tombstones for `tombstoneTtlMs`: forgetting one too
// early lets a late old event re-create a removed record, so keep them longer than any delivery of
// yours can be late (retries, replays of dead letters).
// Self-contained like the rest of the kit.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { WebhookEvent } from './event.ts';

export interface VersionStore {
  /** The last version applied to `resourceId` (a kept tombstone's for a deleted record), or null. */
  lastVersion(resourceId: string): number | null | Promise<number | null>;
  /** Records that `version` of `resourceId` was applied; `deleted: true` keeps it as a tombstone. */
  record(resourceId: string, version: number, options?: { deleted?: boolean }): void | Promise<void>;
}

/** Tombstones of deleted records are kept this long by default (30 days). */
export const DEFAULT_TOMBSTONE_TTL_MS = 30 * 24 * 60 * 60 * 1000;

type Entry = { version: number; deletedAt: number | null };
/** The serialised form of a MemoryVersionStore: resource id -> [version, deletedAt epoch ms or null]. */
export type VersionSnapshot = Record<string, [number, number | null]>;

export type MemoryVersionStoreOptions = { tombstoneTtlMs?: number; now?: () => number };

/** In memory (forgets on restart unless you save `toJSON()` with your data, as the example receiver does). */
export class MemoryVersionStore implements VersionStore {
  readonly tombstoneTtlMs: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();

  constructor(options: MemoryVersionStoreOptions = {}, snapshot: VersionSnapshot = {}) {
    this.tombstoneTtlMs = options.tombstoneTtlMs ?? DEFAULT_TOMBSTONE_TTL_MS;
    if (!(this.tombstoneTtlMs >= 0)) throw new RangeError('tombstoneTtlMs must be 0 or more');
    this.#now = options.now ?? Date.now;
    for (const [id, [version, deletedAt]] of Object.entries(snapshot)) this.#entries.set(id, { version, deletedAt });
  }

  get size(): number {
    return this.#entries.size;
  }

  lastVersion(resourceId: string): number | null {
    const entry = this.#entries.get(resourceId);
    if (!entry) return null;
    if (entry.deletedAt !== null && this.#now() - entry.deletedAt > this.tombstoneTtlMs) {
      this.#entries.delete(resourceId);
      return null;
    }
    return entry.version;
  }

  record(resourceId: string, version: number, options: { deleted?: boolean } = {}): void {
    if (!Number.isSafeInteger(version) || version < 1) throw new RangeError('version must be a positive integer');
    const current = this.#entries.get(resourceId);
    if (current && current.version >= version) return; // never backwards
    this.#entries.set(resourceId, { version, deletedAt: options.deleted ? this.#now() : null });
  }

  /** Drops expired tombstones; returns how many. */
  purgeTombstones(): number {
    let purged = 0;
    for (const id of [...this.#entries.keys()])
      if (this.#entries.get(id)!.deletedAt !== null && this.lastVersion(id) === null) purged++;
    return purged;
  }

  toJSON(): VersionSnapshot {
    this.purgeTombstones();
    return Object.fromEntries([...this.#entries].map(([id, e]) => [id, [e.version, e.deletedAt]]));
  }
}

/**
 * A JSON file (write-then-rename), loaded by `open()`. `record` resolves once the file holds it
 * (writes in flight are coalesced). Fine for one process and thousands of records; use a database
 * table for more, or when the copy lives in a database (then update both in one transaction).
 */
export class FileVersionStore implements VersionStore {
  readonly path: string;
  #memory: MemoryVersionStore;
  readonly #options: MemoryVersionStoreOptions;
  #writing: Promise<void> | null = null;
  #again: Promise<void> | null = null;

  constructor(path: string, options: MemoryVersionStoreOptions = {}) {
    this.path = resolve(path);
    this.#options = options;
    this.#memory = new MemoryVersionStore(options);
  }

  async open(): Promise<this> {
    await mkdir(dirname(this.path), { recursive: true });
    const text = await readFile(this.path, 'utf8').catch((e: NodeJS.ErrnoException) =>
      e.code === 'ENOENT' ? null : Promise.reject(e),
    );
    this.#memory = new MemoryVersionStore(this.#options, text ? (JSON.parse(text) as VersionSnapshot) : {});
    return this;
  }

  lastVersion(resourceId: string): number | null {
    return this.#memory.lastVersion(resourceId);
  }

  async record(resourceId: string, version: number, options: { deleted?: boolean } = {}): Promise<void> {
    this.#memory.record(resourceId, version, options);
    await this.#save();
  }

  /** One write at a time; a record made during a write is written by the next one (shared by all waiting). */
  #save(): Promise<void> {
    if (!this.#writing) {
      this.#writing = this.#write().finally(() => (this.#writing = null));
      return this.#writing;
    }
    this.#again ??= this.#writing.then(() => {
      this.#again = null;
      return this.#save();
    });
    return this.#again;
  }

  async #write(): Promise<void> {
    const tmp = `${this.path}.tmp`;
    await writeFile(tmp, JSON.stringify(this.#memory.toJSON()));
    await rename(tmp, this.path);
  }
}

/** Whether `event` is newer than what `store` holds for its resource (apply it), or not (drop it). */
export async function shouldApply(store: VersionStore, event: Pick<WebhookEvent, 'resource'>): Promise<boolean> {
  const last = await store.lastVersion(event.resource.id);
  return last === null || event.resource.version > last;
}

export type ApplyResult<T> = { applied: true; result: T } | { applied: false; lastVersion: number | null };

// Per store and resource, the application in progress: two events of one resource handled at once
// (concurrent processing, a feed repair beside live deliveries) are checked and applied in turn.
const inProgress = new WeakMap<VersionStore, Map<string, Promise<unknown>>>();

/**
 * Applies `event` with `apply` only when it is newer than the version `store` holds for its
 * resource, then records its version (a tombstone for DELETED and LEFT_VIEW, which remove the record
 * from a copy). Not newer: `apply` is not called.
 * If `apply` throws, nothing is recorded (the event can be applied when it comes again).
 */
export async function applyEvent<T>(
  store: VersionStore,
  event: WebhookEvent,
  apply: (event: WebhookEvent) => T | Promise<T>,
): Promise<ApplyResult<T>> {
  let chains = inProgress.get(store);
  if (!chains) inProgress.set(store, (chains = new Map()));
  const id = event.resource.id;
  const before = chains.get(id) ?? Promise.resolve();
  const run = before.then(async (): Promise<ApplyResult<T>> => {
    const last = await store.lastVersion(id);
    if (last !== null && event.resource.version <= last) return { applied: false, lastVersion: last };
    const result = await apply(event);
    const removed = event.type === 'LEARNING_OPPORTUNITY_DELETED' || event.type === 'LEARNING_OPPORTUNITY_LEFT_VIEW';
    await store.record(id, event.resource.version, { deleted: removed });
    return { applied: true, result };
  });
  const settled = run.catch(() => {});
  chains.set(id, settled);
  void settled.then(() => {
    if (chains.get(id) === settled) chains.delete(id);
  });
  return await run;
}
