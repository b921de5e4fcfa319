// The convergence harness (issue 20, docs/contract.md, "Delivery guarantees"): receivers that keep a copy of the
// catalog from webhook deliveries, writers that change a few dozen records quickly and concurrently,
// and the comparison of a copy with GET /v1/learning-opportunities/{id} for every id.
//
// - startNaiveReceiver: follows the contract to the letter and no further: de-duplicates on the
//   event id, upserts `data` on PUBLISHED/UPDATED, removes on ARCHIVED/DELETED, in arrival order, with
//   no version check; fails a share of deliveries (500) and answers after a few ms of jitter.
// - startKitReceiver: the same copy through the receiver kit (webhookReceiver + applyEvent with a
//   version store), and it re-applies earlier bodies at random (duplicates and old events injected);
//   it can lose its whole store (`wipe`), as a receiver that needs a resync.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import type { CatalogWrites } from '../../src/catalog/catalog-writes.ts';
import type { Api } from '../../src/app/service.ts';
import { applyEvent, MemoryVersionStore, type WebhookEvent, webhookReceiver } from '@lods/receiver-kit';
import { getJson } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import type { Database } from '../../src/app/database.ts';
import { BOSS_SCHEMA, DELIVERY_QUEUE } from '../../src/webhooks/queue/boss.ts';

/** A small seeded PRNG (mulberry32): a failing run can be repeated with its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type CopyReceiver = {
  url: string;
  /** The copy: resource id -> the record's JSON text as delivered. */
  records: Map<string, string>;
  /** Requests received, and how many were answered 2xx. */
  stats: { requests: number; acknowledged: number; applied: number; dropped: number };
  /** Bodies acknowledged, in arrival order. */
  bodies: string[];
  /** From now on, answer every request with this status (null: back to the normal behaviour). */
  down: (status: number | null) => void;
  close: () => Promise<void>;
};

type Behaviour = { failRate: number; jitterMs: number; random: () => number };

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`));
  });
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });

/** Contract-following, no version check: de-duplicate on the event id, upsert or remove, acknowledge. */
export async function startNaiveReceiver(behaviour: Behaviour): Promise<CopyReceiver & { forget: () => void }> {
  const records = new Map<string, string>();
  const seen = new Set<string>();
  const stats = { requests: 0, acknowledged: 0, applied: 0, dropped: 0 };
  const bodies: string[] = [];
  let downStatus: number | null = null;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      stats.requests++;
      const fail = downStatus !== null || behaviour.random() < behaviour.failRate;
      setTimeout(() => {
        if (fail) {
          res.writeHead(downStatus ?? 500).end();
          return;
        }
        const text = Buffer.concat(chunks).toString('utf8');
        const event = JSON.parse(text) as WebhookEvent;
        if (!seen.has(event.id)) {
          seen.add(event.id);
          applyNaively(records, event);
          stats.applied++;
        }
        stats.acknowledged++;
        bodies.push(text);
        res.writeHead(200).end();
      }, behaviour.random() * behaviour.jitterMs);
    });
  });
  return {
    url: await listen(server),
    records,
    stats,
    bodies,
    down: (s) => (downStatus = s),
    /** Loses everything, as a receiver whose disk was replaced: its copy and the event ids it had seen. */
    forget: () => {
      records.clear();
      seen.clear();
    },
    close: () => closeServer(server),
  };
}

function applyNaively(records: Map<string, string>, event: WebhookEvent): void {
  if (event.type === 'LEARNING_OPPORTUNITY_PUBLISHED' || event.type === 'LEARNING_OPPORTUNITY_UPDATED')
    records.set(event.resource.id, JSON.stringify(event.data));
  else records.delete(event.resource.id);
}

/** A receiver-kit copy that can also lose its whole store, as a receiver whose disk was replaced. */
export type KitReceiver = CopyReceiver & {
  /** Forgets the copy, the versions held and the event ids seen (what a delivery in progress applies goes to the old store). */
  wipe: () => void;
  /** Resolves once the kit has processed every delivery it acknowledged. */
  idle: () => Promise<void>;
};

/**
 * Built on the receiver kit: webhookReceiver (de-duplication on the event id, unsigned here) and
 * applyEvent with a MemoryVersionStore. After each acknowledged delivery it may also process an
 * earlier acknowledged body again, straight into the same code path (`duplicateRate`): duplicates,
 * and old events arriving late, as at-least-once delivery and replays can bring them.
 */
export async function startKitReceiver(behaviour: Behaviour & { duplicateRate: number }): Promise<KitReceiver> {
  const stats = { requests: 0, acknowledged: 0, applied: 0, dropped: 0 };
  const bodies: string[] = [];
  let downStatus: number | null = null;
  const fresh = () => {
    const records = new Map<string, string>();
    const versions = new MemoryVersionStore();
    const apply = async (event: WebhookEvent) => {
      const outcome = await applyEvent(versions, event, (e) => applyNaively(records, e));
      if (outcome.applied) stats.applied++;
      else stats.dropped++;
    };
    return { records, apply, handler: webhookReceiver({ allowUnsigned: true, concurrency: 4, process: apply }) };
  };
  let store = fresh();
  let wipedAt = 0;
  const server = createServer((req, res) => {
    stats.requests++;
    const fail = downStatus !== null || behaviour.random() < behaviour.failRate;
    setTimeout(() => {
      if (fail) {
        req.resume();
        res.writeHead(downStatus ?? 500).end();
        return;
      }
      const chunks: Buffer[] = [];
      const original = res.writeHead.bind(res);
      req.on('data', (c: Buffer) => chunks.push(c));
      res.writeHead = ((status: number, ...rest: unknown[]) => {
        if (status >= 200 && status < 300) {
          stats.acknowledged++;
          bodies.push(Buffer.concat(chunks).toString('utf8'));
          // An injected duplicate or late old event: an earlier body of this store's time (since the
          // last wipe: a receiver that lost its store cannot be told apart from a new one), processed again.
          const since = bodies.length - wipedAt;
          if (since > 1 && behaviour.random() < behaviour.duplicateRate) {
            const old = JSON.parse(bodies[wipedAt + Math.floor(behaviour.random() * since)]!) as WebhookEvent;
            const { apply } = store;
            setTimeout(() => void apply(old), behaviour.random() * behaviour.jitterMs);
          }
        }
        return (original as (...args: unknown[]) => typeof res)(status, ...rest);
      }) as typeof res.writeHead;
      void store.handler(req, res);
    }, behaviour.random() * behaviour.jitterMs);
  });
  const url = await listen(server);
  return {
    url,
    get records() {
      return store.records;
    },
    stats,
    bodies,
    down: (s) => (downStatus = s),
    wipe: () => {
      store = fresh();
      wipedAt = bodies.length;
    },
    idle: () => store.handler.idle(),
    close: async () => {
      await closeServer(server);
      await store.handler.idle();
    },
  };
}

export type ChangeCounts = { writes: number; events: number; refused: number };

/**
 * `writers` concurrent loops make `total` changes between them to the records `ids`: new content
 * (a create when the record does not exist, which re-creates a deleted one), publish, archive,
 * delete. Refusals (archiving a draft, deleting a missing record) count as `refused`.
 */
export async function churn(
  writes: CatalogWrites,
  ids: readonly string[],
  options: { total: number; writers: number; random: () => number },
): Promise<ChangeCounts> {
  const counts: ChangeCounts = { writes: 0, events: 0, refused: 0 };
  const { random } = options;
  let left = options.total;
  const pick = () => ids[Math.floor(random() * ids.length)]!;
  async function writer(): Promise<void> {
    while (left > 0) {
      left--;
      const id = pick();
      const r = random();
      try {
        if (r < 0.35)
          await writes.upsert(
            parseLearningOpportunityInput(
              buildLearningOpportunityInput({ id, title: `Title ${randomUUID().slice(0, 8)}` }),
            ),
          );
        else if (r < 0.65) await writes.publish(id);
        else if (r < 0.82) await writes.archive(id);
        else await writes.delete(id);
        counts.writes++;
      } catch {
        counts.refused++;
      }
    }
  }
  await Promise.all(Array.from({ length: options.writers }, writer));
  return counts;
}

export type Drift = { stale: string[]; resurrected: string[]; missing: string[] };

/** Compares a copy with GET /v1/learning-opportunities/{id} for every id. */
export async function driftFromCatalog(
  api: Api,
  key: string,
  ids: readonly string[],
  records: Map<string, string>,
): Promise<Drift> {
  const drift: Drift = { stale: [], resurrected: [], missing: [] };
  for (const id of ids) {
    const got = await getJson(api, `/v1/learning-opportunities/${id}`, key);
    const copy = records.get(id);
    if (got.status === 404) {
      if (copy !== undefined) drift.resurrected.push(id);
    } else if (got.status !== 200) {
      throw new Error(`GET ${id} answered ${got.status}`);
    } else if (copy === undefined) {
      drift.missing.push(id);
    } else if (copy !== JSON.stringify(got.body)) {
      drift.stale.push(id);
    }
  }
  return drift;
}

/** Deliveries still open (jobs waiting, retrying or in flight, and deliveries waiting behind them). */
export async function openDeliveries(db: Database): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `select count(*)::int as n from ${BOSS_SCHEMA}.job where name = $1 and state in ('created', 'retry', 'active')`,
    [DELIVERY_QUEUE],
  );
  return rows[0]!.n;
}

/** Waits until nothing is open for `quietMs` (a retry is a new job: there is no gap in between). */
export async function drained(db: Database, timeoutMs: number, quietMs = 300): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quietSince: number | null = null;
  for (;;) {
    const open = await openDeliveries(db);
    if (open === 0) {
      quietSince ??= Date.now();
      if (Date.now() - quietSince >= quietMs) return;
    } else {
      quietSince = null;
    }
    if (Date.now() > deadline) throw new Error(`deliveries still open after ${timeoutMs} ms: ${open}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
