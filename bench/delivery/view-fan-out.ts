// The fan-out's cost per change with 1,000 receivers subscribed to views (BENCH_VIEW_RECEIVERS),
// against one receiver without a view, in the same run: rounds alternate between the two sets
// (the other set disabled), each BENCH_VIEW_CHANGES single-record writes through the catalog's own
// mutation path (catalog-writes upsert: a published record's format and sessions' country changed,
// so records enter and leave views). No worker runs: the figure is the writer's, from the change to
// its commit with every delivery enqueued (and the LEFT_VIEW events stored). Also the routing alone:
// every receiver's view evaluated against one change in this process (view-routing.ts routeChange).
import { randomUUID } from 'node:crypto';
import type { Database } from '../../src/app/database.ts';
import { createCatalog } from '../../src/app/service.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import type { Config } from '../../src/kernel/config.ts';
import type { Logger } from '../../src/kernel/logger.ts';
import { createFanOut } from '../../src/webhooks/delivery/fan-out.ts';
import { routeChange, viewOfText } from '../../src/webhooks/delivery/view-routing.ts';
import { BOSS_SCHEMA, DELIVERY_QUEUE, startBoss } from '../../src/webhooks/queue/boss.ts';
import { addReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { createSecretKeyring } from '../../src/webhooks/secrets/secret-box.ts';
import { viewFacets } from '../../src/views/view.ts';

const FORMATS = ['ONLINE', 'HYBRID', 'IN_PERSON'];
const COUNTRIES = ['DE', 'FR', 'AT', 'NL', 'ES', 'IT', 'PL', 'GB'];
const TOPICS = ['data', 'python', 'design', 'management', 'cloud'];

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

/** Enables the receivers for which `condition` holds and disables the others (as `receivers disable` records it). */
async function enable(db: Database, condition: string, values: unknown[] = []): Promise<void> {
  await db.pool.query(
    `update receiver set enabled = x.on, disabled_reason = case when x.on then null else 'manual' end,
            disabled_at = case when x.on then null else now() end
       from (select id, ${condition} as on from receiver) x where x.id = receiver.id`,
    values,
  );
}

/** The i-th receiver's view: one to three parameters of the catalog's own values. */
function viewText(i: number): string {
  const parts = [`country=${COUNTRIES[i % COUNTRIES.length]},${COUNTRIES[(i * 7 + 3) % COUNTRIES.length]}`];
  if (i % 2 === 0) parts.push(`format=${FORMATS[i % FORMATS.length]}`);
  if (i % 3 === 0) parts.push(`topic=${TOPICS[i % TOPICS.length]}`);
  return parts.join('&');
}

export async function runViewFanOut(options: {
  db: Database;
  config: Config['webhooks'];
  logger: Logger;
  receivers: number;
  changes: number;
  rounds: number;
  log: (line: string) => void;
}): Promise<string> {
  const { db, log } = options;
  const boss = await startBoss({ url: db.url, config: options.config, logger: options.logger, supervise: false });
  try {
    const { writes } = createCatalog(db, createFanOut({ boss, orm: db.orm }));
    const secrets = createSecretKeyring({ current: Buffer.alloc(32, 9) });
    const deps = { pool: db.pool, secrets, allowPrivateTargets: true };
    // Receivers nobody answers: no worker runs, the deliveries stay queued.
    const url = 'http://127.0.0.1:9/hooks';
    await enable(db, 'false');
    log(`adding ${options.receivers} view receivers...`);
    const plain = (await addReceiver(deps, { url })).id;
    const viewIds: string[] = [];
    for (let i = 0; i < options.receivers; i++) viewIds.push((await addReceiver(deps, { url, view: viewText(i) })).id);
    const ids = (
      await seedCatalog(db.pool, { count: options.changes, seed: 7, now: new Date() }).then(() =>
        db.pool.query<{ id: string; doc: string }>(
          `select id, doc from learning_opportunity where status = 'PUBLISHED' order by random() limit $1`,
          [options.changes],
        ),
      )
    ).rows;
    const opened = async () =>
      Number(
        (
          await db.pool.query<{ n: string }>(
            `select (select count(*) from ${BOSS_SCHEMA}.job where name = $1) + (select coalesce(sum(cardinality(waiting)), 0) from delivery_lane) as n`,
            [DELIVERY_QUEUE],
          )
        ).rows[0]!.n,
      );
    let k = 0;
    async function round(set: 'plain' | 'views') {
      await enable(db, '(id = $1) = $2', [plain, set === 'plain']);
      const before = await opened();
      const ms: number[] = [];
      for (const { doc } of ids) {
        const input = JSON.parse(doc) as Record<string, unknown> & { sessions: { location: object | null }[] };
        const country = COUNTRIES[k++ % COUNTRIES.length];
        const sessions = input.sessions.map((s) => (s.location ? { ...s, location: { ...s.location, country } } : s));
        const change = parseLearningOpportunityInput({
          ...input,
          format: FORMATS[k % FORMATS.length],
          title: `Title ${randomUUID().slice(0, 8)}`,
          sessions,
        });
        const t = performance.now();
        await writes.upsert(change);
        ms.push(performance.now() - t);
      }
      return { ms, deliveries: (await opened()) - before };
    }
    const results: Record<'plain' | 'views', { ms: number[]; deliveries: number }> = {
      plain: { ms: [], deliveries: 0 },
      views: { ms: [], deliveries: 0 },
    };
    await round('views'); // warm-up: prepared statements, caches
    for (let r = 0; r < options.rounds; r++)
      for (const set of r % 2 ? (['views', 'plain'] as const) : (['plain', 'views'] as const)) {
        log(`view fan-out: round ${r + 1}, ${set}`);
        const got = await round(set);
        results[set].ms.push(...got.ms);
        results[set].deliveries += got.deliveries;
      }
    // The routing alone: every view receiver against one change's stored facets.
    const receivers = (
      await db.pool.query<{ id: string; view: string }>('select id, view from receiver where id = any($1)', [viewIds])
    ).rows.map((r) => ({ id: r.id, eventTypes: [], view: viewOfText(r.view) }));
    const sample = JSON.parse(ids[0]!.doc) as unknown;
    const event = {
      id: randomUUID(),
      type: 'LEARNING_OPPORTUNITY_UPDATED',
      resourceId: ids[0]!.id,
      version: 2,
      occurredAt: new Date(),
      viewBefore: viewFacets(sample),
      viewAfter: viewFacets({ ...(sample as object), format: 'HYBRID' }),
    };
    const loops = 200;
    const t = performance.now();
    for (let i = 0; i < loops; i++) for (const r of receivers) routeChange(r, event);
    const routingUs = ((performance.now() - t) * 1000) / loops;
    await enable(db, 'false');

    const n = options.changes * options.rounds;
    const p50 = (set: 'plain' | 'views') => percentile(results[set].ms, 50);
    const p99 = (set: 'plain' | 'views') => percentile(results[set].ms, 99);
    return (
      `\nView fan-out: ${options.rounds} rounds of ${options.changes} single-record updates (format and country changed), alternated\n` +
      `  ${'1 receiver without a view'.padEnd(30)}: write p50 ${p50('plain').toFixed(2)} ms, p99 ${p99('plain').toFixed(2)} ms, ${(results.plain.deliveries / n).toFixed(2)} deliveries per change\n` +
      `  ${`${options.receivers} receivers with views`.padEnd(30)}: write p50 ${p50('views').toFixed(2)} ms, p99 ${p99('views').toFixed(2)} ms, ${(results.views.deliveries / n).toFixed(2)} deliveries per change\n` +
      `  ${`the views' cost per change`.padEnd(30)}: ${(p50('views') - p50('plain')).toFixed(2)} ms at p50 (one receiver query, ${routingUs.toFixed(0)} µs routing in this process, the enqueueing of its deliveries)\n`
    );
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}
