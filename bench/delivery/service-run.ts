// The service side of the benchmark: the real fan-out (pg-boss jobs inserted in the producing
// transaction) and the real delivery worker, in one process as with ROLE=all. The commit time of a
// change is the moment its transaction's promise resolved, i.e. just after COMMIT.
//
// Two producers:
//   catalog:  catalog-writes publish() of pre-seeded drafts, one transaction per record (the whole
//             mutation path).
//   recorder: the change recorder the mutations call (the event stored with its body, then the
//             fan-out), for `batch` drafts per transaction: the same events and jobs, produced faster.
import { randomBytes } from 'node:crypto';
import type { Config } from '../../src/kernel/config.ts';
import type { Database } from '../../src/app/database.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import type { Logger } from '../../src/kernel/logger.ts';
import { createCatalog } from '../../src/app/service.ts';
import { createFanOut } from '../../src/webhooks/delivery/fan-out.ts';
import { startBoss } from '../../src/webhooks/queue/boss.ts';
import { addReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { createSecretKeyring } from '../../src/webhooks/secrets/secret-box.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';

export type Producer = 'catalog' | 'recorder';
export type Draft = { id: string; doc: string };
/** resource id -> epoch ms (fractional) when its transaction had committed. */
export type CommitTimes = Map<string, number>;
/** A change of a published record to another version (an UPDATED event), for the ordering rows. */
export type Update = { id: string; before: string; after: string };
export type ProduceOptions = {
  producer: Producer;
  streams: number;
  batch: number;
  /** changes/s to aim for; 0 = unpaced */ rate: number;
};

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startServiceSide(options: {
  db: Database;
  config: Config['webhooks'];
  logger: Logger;
  receiverUrl: string;
  secret: string | null;
}) {
  const { db, config, logger } = options;
  const boss = await startBoss({ url: db.url, config, logger, supervise: true });
  let worker: DeliveryWorker | null = null;
  const fanOut = createFanOut({ boss, orm: db.orm });
  const { writes } = createCatalog(db, fanOut);
  const recordChange = createChangeRecorder(fanOut);
  const secrets = createSecretKeyring({ current: randomBytes(32) });
  await addReceiver(
    { pool: db.pool, secrets, allowPrivateTargets: true },
    { url: options.receiverUrl, ...(options.secret ? { secret: options.secret } : {}) },
  );

  async function publishChunk(producer: Producer, chunk: readonly Draft[], committed: CommitTimes): Promise<void> {
    if (producer === 'catalog') {
      for (const { id } of chunk) {
        await writes.publish(id);
        committed.set(id, now());
      }
      return;
    }
    await db.orm.em.fork().transactional(async (em) => {
      const at = new Date();
      await recordChange(
        em,
        chunk.map((d) => ({
          resourceId: d.id,
          before: { status: 'DRAFT' as const, doc: d.doc },
          after: { status: 'PUBLISHED' as const, doc: d.doc },
          at,
        })),
      );
    });
    const t = now();
    for (const d of chunk) committed.set(d.id, t);
  }

  /** Commits `updates` `batch` per transaction in `streams` streams (a transaction never holds two of one record). */
  async function commitUpdates(updates: readonly Update[], options: { streams: number; batch: number }): Promise<void> {
    let next = 0;
    const stream = async () => {
      while (next < updates.length) {
        const chunk = updates.slice(next, next + options.batch);
        next += options.batch;
        await db.orm.em.fork().transactional(async (em) => {
          const at = new Date();
          await recordChange(
            em,
            chunk.map((u) => ({
              resourceId: u.id,
              before: { status: 'PUBLISHED' as const, doc: u.before },
              after: { status: 'PUBLISHED' as const, doc: u.after },
              at,
            })),
          );
        });
      }
    };
    await Promise.all(Array.from({ length: options.streams }, stream));
  }

  async function produce(drafts: readonly Draft[], produceOptions: ProduceOptions): Promise<CommitTimes> {
    const chunkSize = produceOptions.producer === 'catalog' ? 1 : produceOptions.batch;
    const committed: CommitTimes = new Map();
    const start = now();
    let next = 0;
    const stream = async () => {
      while (next < drafts.length) {
        const from = next;
        next += chunkSize;
        if (produceOptions.rate > 0) {
          const due = start + (from / produceOptions.rate) * 1000;
          if (due > now()) await sleep(due - now());
        }
        await publishChunk(produceOptions.producer, drafts.slice(from, from + chunkSize), committed);
      }
    };
    await Promise.all(Array.from({ length: produceOptions.streams }, stream));
    return committed;
  }

  const startWorker = async () => {
    worker ??= await startDeliveryWorker({ boss, pool: db.pool, config, logger, secrets });
  };
  const stopWorker = async () => {
    await worker?.stop({ timeoutMs: 5000 });
    worker = null;
  };

  return {
    /** Live: the worker runs while the changes are produced. */
    async publishLive(drafts: readonly Draft[], produceOptions: ProduceOptions): Promise<CommitTimes> {
      await startWorker();
      return await produce(drafts, produceOptions);
    },
    /** Backlog: the changes are committed with no worker running; drain() then starts one. */
    async fillBacklog(drafts: readonly Draft[], produceOptions: ProduceOptions): Promise<void> {
      await stopWorker();
      await produce(drafts, produceOptions);
    },
    /** Starts the worker on the backlog; returns the moment it was started. */
    async drain(): Promise<number> {
      const startedAt = now();
      await startWorker();
      return startedAt;
    },
    /** Commits UPDATED changes (worker state unchanged). */
    commitUpdates,
    /** Stops the worker (an outage, or a backlog about to be built). */
    stopWorker,
    async stop(): Promise<void> {
      await stopWorker();
      await boss.stop({ graceful: true, close: true });
    },
  };
}
