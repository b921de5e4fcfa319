// Delivery benchmark (`npm run bench:delivery`): BENCH_ROUNDS (3) rounds of BENCH_COUNT (3,000)
// published changes fanned out by pg-boss and delivered by the real worker to one local receiver (a
// child process that records the arrival of each event id), each beside a bare baseline measured in
// the same round. The summary gives the median over the rounds of each figure and of the ratio
// backlog drain / bare baseline all at once (the worker's share of what the machine can do: both
// sides of it feel the same load, which on a shared machine varies from minute to minute).
//
//   live:     the worker runs while BENCH_COUNT pre-seeded drafts are published in BENCH_STREAMS (4)
//             streams: commit-to-receipt latency p50/p99 (and deliveries/s, which cannot exceed the
//             producers' commit rate).
//   backlog:  BENCH_COUNT more changes are committed with the worker stopped, then a worker starts:
//             deliveries/s of the delivery path itself (worker start to last receipt).
//   baseline: the live run's event bodies, signed and POSTed by a bare loop over a keep-alive agent
//             at the same concurrency (WEBHOOK_CONCURRENCY_PER_RECEIVER): all at once (the
//             ceiling) just before the backlog is filled and again just after the drain, compared
//             at the mean of the two rates; and released on the live run's commit schedule
//             (comparable latency).
//
// BENCH_PRODUCER for the live run: recorder (default; the change recorder + fan-out that mutations
// call, BENCH_BATCH (20) changes per transaction) or catalog (catalog-writes publish(), one
// transaction per record). BENCH_RATE paces the live producers (changes/s; default 1000, the
// throughput target). 0 = unpaced: on a 2-core machine the producers then commit faster than the
// worker sharing their cores can send, and the "latency" grows with the backlog (it measures how
// far the producers outrun the worker, not the path from commit to receipt).
// Commit time = the moment the producing transaction's promise resolved (after COMMIT); figures
// from the event's occurredAt (taken inside the transaction, before COMMIT) are printed too.
// Database: a throw-away embedded PostgreSQL, or a scratch database on DATABASE_URL's server.
import { fork } from 'node:child_process';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { startScratchPostgres } from '../../test/support/scratch-postgres.ts';
import { type BaselineBody, runBaseline } from './baseline.ts';
import { createCpuMeter } from './cpu.ts';
import type { ReceiverCommand, ReceiverReport } from './receiver-process.ts';
import { orderingReport, runOrderingRows } from './ordering-run.ts';
import { type Producer, startServiceSide } from './service-run.ts';
import { type Summary, summarize, table } from './stats.ts';
import { median } from '../read-path/http-client.ts';
import { runViewFanOut } from './view-fan-out.ts';

const env = process.env;
const positive = (name: string, fallback: number) => {
  const value = Number(env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};
const COUNT = positive('BENCH_COUNT', 3000);
const ROUNDS = positive('BENCH_ROUNDS', 3);
// Rounds of the ordered drain row (ordering-run.ts): bare, drain, bare on a backlog of their own each; the median ratio counts.
const ORDERED_ROUNDS = positive('BENCH_ORDERED_ROUNDS', 3);
// Discarded first: the worker's first round pays for JIT, pools and prepared statements (its live p99 was 0.9-1.4 s, later rounds' 20-250 ms).
const WARMUP_ROUNDS = Number(env.BENCH_WARMUP_ROUNDS ?? 1);
if (!Number.isInteger(WARMUP_ROUNDS) || WARMUP_ROUNDS < 0)
  throw new Error('BENCH_WARMUP_ROUNDS must be an integer >= 0');
const STREAMS = positive('BENCH_STREAMS', 4);
const BATCH = positive('BENCH_BATCH', 20);
const RATE = Number(env.BENCH_RATE ?? 1000);
const PRODUCER = (env.BENCH_PRODUCER ?? 'recorder') as Producer;
const SECRET = env.BENCH_SECRET === '' ? null : (env.BENCH_SECRET ?? 'bench-signing-secret-0123456789');
const STALL_MS = positive('BENCH_STALL_MS', 30_000);
// `ordering`: the warm-up rounds, then only the ordering rows (no measured rounds): for working on those rows.
// `ordered-drain`: the warm-up rounds, then only the ordered drain's rounds (with their CPU per delivery beside the bare loop's).
const ONLY = env.BENCH_ONLY ?? '';
if (ONLY !== '' && ONLY !== 'ordering' && ONLY !== 'ordered-drain' && ONLY !== 'views')
  throw new Error('BENCH_ONLY must be unset, ordering, ordered-drain or views');
// The view fan-out row (view-fan-out.ts): receivers with views, changes per round, rounds.
const VIEW_RECEIVERS = positive('BENCH_VIEW_RECEIVERS', 1000);
const VIEW_CHANGES = positive('BENCH_VIEW_CHANGES', 200);
const VIEW_ROUNDS = positive('BENCH_VIEW_ROUNDS', 4);
const TARGETS = { perSecond: 1000, ratio: 0.35, p50Ms: 100, p99Ms: 50, orderedRatio: 0.5, besideHotP99Ms: 20 };
if (PRODUCER !== 'recorder' && PRODUCER !== 'catalog') throw new Error('BENCH_PRODUCER must be recorder or catalog');
if (!Number.isFinite(RATE) || RATE < 0) throw new Error('BENCH_RATE must be a number >= 0');

const now = () => performance.timeOrigin + performance.now();
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const last = (arrivals: [string, number][]) => arrivals.reduce((max, [, at]) => Math.max(max, at), -Infinity);

/** The receiver child, and a request/answer helper over its IPC channel. */
async function startReceiver() {
  const child = fork(new URL('./receiver-process.ts', import.meta.url), {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = <T extends ReceiverReport['type']>(command: ReceiverCommand | null, answer: T) =>
    new Promise<Extract<ReceiverReport, { type: T }>>((resolve) => {
      const onMessage = (message: ReceiverReport) => {
        if (message.type !== answer) return;
        child.off('message', onMessage);
        resolve(message as Extract<ReceiverReport, { type: T }>);
      };
      child.on('message', onMessage);
      if (command) child.send(command);
    });
  const { port } = await ask(null, 'ready');
  const waitFor = async (expected: number) => {
    let seen = -1;
    let changedAt = Date.now();
    for (;;) {
      const { received } = await ask({ type: 'count' }, 'count');
      if (received >= expected) return;
      if (received !== seen) [seen, changedAt] = [received, Date.now()];
      if (Date.now() - changedAt > STALL_MS) {
        log(`gave up waiting: ${received}/${expected} received, no progress for ${STALL_MS} ms`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    child,
    collect: () => ask({ type: 'collect' }, 'collected'),
    waitFor,
  };
}

type Service = Awaited<ReturnType<typeof startServiceSide>>;
type Receiver = Awaited<ReturnType<typeof startReceiver>>;
type Draft = { id: string; doc: string };
/** µs of CPU per delivery in one round: this process in the drain (the worker) and the bare loop, PostgreSQL in the drain. */
type RoundCpu = { drainProcess: number; drainDatabase: number | null; bareProcess: number };

/** One round: live, backlog drain, and both baselines on this round's events. */
async function runRound(
  round: number,
  ctx: {
    db: Database;
    service: Service;
    receiver: Receiver;
    drafts: Draft[];
    concurrency: number;
    timeoutMs: number;
    cpu: Awaited<ReturnType<typeof createCpuMeter>>;
  },
) {
  const { db, service, receiver, drafts } = ctx;
  const tag = round > 0 ? `round ${round}/${ROUNDS}` : `warm-up round (discarded)`;
  // The catalog producer publishes for real: every round starts from drafts again.
  if (PRODUCER === 'catalog')
    await db.pool.query(
      `update learning_opportunity set status = 'DRAFT', published_at = null where status <> 'DRAFT'`,
    );
  const { rows: since } = await db.pool.query<{ at: string }>('select clock_timestamp()::text as at');

  log(`${tag} live: publishing ${COUNT} drafts (${PRODUCER} producer, ${STREAMS} streams) with the worker running...`);
  const committedAt = await service.publishLive(drafts, {
    producer: PRODUCER,
    streams: STREAMS,
    batch: BATCH,
    rate: RATE,
  });
  await receiver.waitFor(COUNT);
  const live = await receiver.collect();
  const { rows: events } = await db.pool.query<{
    id: string;
    type: string;
    resource_id: string;
    occurred_at: Date | string;
    body: string;
  }>('select id, type, resource_id, occurred_at, body from event where occurred_at >= $1 order by occurred_at', [
    since[0]!.at,
  ]);

  // The bare loop all at once, on this round's bodies: run just before the backlog is filled and
  // again just after the drain, so that the drain is compared with what the machine could do on
  // both sides of it (its speed drifts by tens of percent within a minute on a shared machine).
  const bodies = events.map((e) => ({ eventId: e.id, type: e.type, body: Buffer.from(e.body) }));
  const burst = async (when: string) => {
    log(`${tag} baseline: all bodies at once (${when})...`);
    const cpu = await ctx.cpu();
    const t0 = now();
    const { failed } = await runBaseline({
      url: receiver.url,
      secret: SECRET,
      bodies: bodies.map((b) => ({ ...b, releaseAtMs: t0 })),
      concurrency: ctx.concurrency,
      timeoutMs: ctx.timeoutMs,
    });
    const cpuPer = await cpu(bodies.length);
    const { arrivals, duplicates } = await receiver.collect();
    return {
      run: summarize({
        name: 'bare baseline: all at once',
        delivered: arrivals.length,
        spanMs: last(arrivals) - t0,
        latenciesMs: null,
        duplicates,
      }),
      cpuUs: cpuPer.processUs,
      failed,
    };
  };
  const burstBefore = await burst('before the backlog');

  log(`${tag} backlog: committing ${COUNT} more changes with the worker stopped...`);
  await service.fillBacklog(drafts, { producer: 'recorder', streams: STREAMS, batch: BATCH, rate: 0 });
  log(`${tag} backlog: worker started, draining...`);
  const drainCpu = await ctx.cpu();
  const drainStart = await service.drain();
  await receiver.waitFor(COUNT);
  const drainCpuPer = await drainCpu(COUNT);
  const drained = await receiver.collect();
  const burstAfter = await burst('after the drain');

  const liveArrivals = new Map(live.arrivals);
  const commits = [...committedAt.values()];
  const [firstCommit, lastCommit] = [Math.min(...commits), Math.max(...commits)];
  const fromCommit: number[] = [];
  const fromOccurred: number[] = [];
  for (const e of events) {
    const at = liveArrivals.get(e.id);
    if (at === undefined) continue;
    fromCommit.push(at - committedAt.get(e.resource_id)!);
    fromOccurred.push(at - new Date(e.occurred_at).getTime());
  }
  const liveSpan = last(live.arrivals) - firstCommit;
  const liveRun = summarize({
    name: 'service live: from commit',
    delivered: liveArrivals.size,
    spanMs: liveSpan,
    latenciesMs: fromCommit,
    duplicates: live.duplicates,
  });
  const occurredRun = summarize({
    name: 'service live: from occurredAt',
    delivered: liveArrivals.size,
    spanMs: liveSpan,
    latenciesMs: fromOccurred,
    duplicates: live.duplicates,
  });
  const drainRun = summarize({
    name: 'service backlog drain',
    delivered: drained.arrivals.length,
    spanMs: last(drained.arrivals) - drainStart,
    latenciesMs: null,
    duplicates: drained.duplicates,
  });

  const start = now() + 100;
  const scheduled: BaselineBody[] = events.map((e, i) => ({
    ...bodies[i]!,
    releaseAtMs: start + (committedAt.get(e.resource_id)! - firstCommit),
  }));
  log(
    `${tag} baseline: the same ${events.length} bodies on the live commit schedule, concurrency ${ctx.concurrency}...`,
  );
  const replay = await runBaseline({
    url: receiver.url,
    secret: SECRET,
    bodies: scheduled,
    concurrency: ctx.concurrency,
    timeoutMs: ctx.timeoutMs,
  });
  const replayed = await receiver.collect();
  const releaseOf = new Map(scheduled.map((b) => [b.eventId, b.releaseAtMs]));
  const replayRun = summarize({
    name: 'bare baseline: same schedule',
    delivered: replayed.arrivals.length,
    spanMs: last(replayed.arrivals) - start,
    latenciesMs: replayed.arrivals.map(([id, at]) => at - releaseOf.get(id)!),
    duplicates: replayed.duplicates,
  });
  // The baseline row: both bursts' deliveries, at the mean of their rates.
  const bursts = [burstBefore, burstAfter];
  const burstRun = {
    ...burstBefore.run,
    delivered: burstBefore.run.delivered + burstAfter.run.delivered,
    duplicates: burstBefore.run.duplicates + burstAfter.run.duplicates,
    perSecond: (burstBefore.run.perSecond + burstAfter.run.perSecond) / 2,
  };
  const ratio = drainRun.perSecond / burstRun.perSecond;
  const cpu: RoundCpu = {
    drainProcess: drainCpuPer.processUs,
    drainDatabase: drainCpuPer.databaseUs,
    bareProcess: (burstBefore.cpuUs + burstAfter.cpuUs) / 2,
  };
  log(
    `${tag}: drain ${drainRun.perSecond.toFixed(0)}/s (first receipt ${(Math.min(...drained.arrivals.map(([, at]) => at)) - drainStart).toFixed(0)} ms after its start), ` +
      `bare ${burstBefore.run.perSecond.toFixed(0)}/s before and ${burstAfter.run.perSecond.toFixed(0)}/s after, ratio ${ratio.toFixed(2)}x; live p50 ${liveRun.p50?.toFixed(1)} ms, p99 ${liveRun.p99?.toFixed(1)} ms; ` +
      `CPU per delivery: drain ${cpu.drainProcess.toFixed(0)} µs + database ${cpu.drainDatabase?.toFixed(0) ?? '-'} µs, bare ${cpu.bareProcess.toFixed(0)} µs`,
  );
  return {
    runs: [liveRun, occurredRun, drainRun, replayRun, burstRun],
    ratio,
    cpu,
    failed: replay.failed + bursts.reduce((n, b) => n + b.failed, 0),
    commits: commits.length,
    commitSeconds: (lastCommit - firstCommit) / 1000,
  };
}

/** Per row, the median of each figure over the rounds (delivered and duplicates: the total). */
function medianRuns(rounds: Summary[][]): Summary[] {
  return rounds[0]!.map((row, i) => {
    const column = (pick: (s: Summary) => number | null) => {
      const values = rounds.map((r) => pick(r[i]!)).filter((v): v is number => v !== null);
      return values.length ? median(values) : null;
    };
    return {
      name: row.name,
      delivered: rounds.reduce((sum, r) => sum + r[i]!.delivered, 0),
      perSecond: column((s) => s.perSecond)!,
      p50: column((s) => s.p50),
      p90: column((s) => s.p90),
      p99: column((s) => s.p99),
      max: column((s) => s.max),
      duplicates: rounds.reduce((sum, r) => sum + r[i]!.duplicates, 0),
    };
  });
}

async function main(): Promise<void> {
  const config = { ...loadConfig(env).webhooks, allowPrivateTargets: true };
  const logger = createLogger({ level: env.LOG_LEVEL ?? 'warn', destination: process.stderr });
  const pg = await startScratchPostgres({ serverUrl: env.DATABASE_URL, prefix: 'lods-bench-delivery' });
  const db = await connectDatabase(pg.url, { poolMax: 20, connectTimeoutMs: 5000, migrate: true });
  const receiver = await startReceiver();
  const cleanup = async () => {
    receiver.child.disconnect();
    await db.close();
    await pg.stop();
  };
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));

  const viewFanOut = () =>
    runViewFanOut({
      db,
      config,
      logger,
      receivers: VIEW_RECEIVERS,
      changes: VIEW_CHANGES,
      rounds: VIEW_ROUNDS,
      log,
    });
  try {
    if (ONLY === 'views') {
      process.stdout.write(await viewFanOut());
      return;
    }
    const { rows: version } = await db.pool.query<{ server_version: string }>('show server_version');
    log(`seeding ${COUNT} records...`);
    await seedCatalog(db.pool, { count: COUNT, seed: 42 });
    // Seeded records are PUBLISHED; turned into drafts so that publishing them is a real change.
    const { rows: drafts } = await db.pool.query<Draft>(
      `update learning_opportunity set status = 'DRAFT', published_at = null returning id, doc`,
    );
    await db.pool.query('analyze learning_opportunity');
    const service = await startServiceSide({ db, config, logger, receiverUrl: receiver.url, secret: SECRET });
    const concurrency = config.concurrencyPerReceiver;
    const cpu = await createCpuMeter(db.pool, !env.DATABASE_URL);
    const results: Awaited<ReturnType<typeof runRound>>[] = [];
    const roundContext = { db, service, receiver, drafts, concurrency, timeoutMs: config.timeoutMs, cpu };
    for (let warmUp = 0; warmUp < WARMUP_ROUNDS; warmUp++) await runRound(0, roundContext);
    if (ONLY === '') for (let round = 1; round <= ROUNDS; round++) results.push(await runRound(round, roundContext));
    const ordering = await runOrderingRows({
      db,
      service,
      receiver,
      drafts,
      count: COUNT,
      orderedRounds: ORDERED_ROUNDS,
      batch: BATCH,
      rate: RATE,
      secret: SECRET,
      concurrency,
      timeoutMs: config.timeoutMs,
      cpu,
      log,
      spreadOnly: ONLY === 'ordered-drain',
    });
    await service.stop();
    if (ONLY === 'ordering' || ONLY === 'ordered-drain') {
      process.stdout.write(orderingReport(ordering, { count: COUNT, targets: TARGETS }));
      return;
    }
    // Every attempt the worker recorded (the warm-up's too): more attempts than deliveries means retries happened.
    const { rows: attempts } = await db.pool.query<{ outcome: string; n: string; max_attempt: number }>(
      'select outcome, count(*) as n, max(attempt) as max_attempt from delivery_attempt group by outcome order by outcome',
    );

    const [liveRun, occurredRun, drainRun, replayRun, burstRun] = medianRuns(results.map((r) => r.runs));
    const ratio = median(results.map((r) => r.ratio));
    const cpuMedian = (pick: (c: RoundCpu) => number | null) => {
      const values = results.map((r) => pick(r.cpu)).filter((v): v is number => v !== null);
      return values.length ? `${median(values).toFixed(0)} µs` : '-';
    };
    const delivered = (run: Summary) => run.delivered === COUNT * ROUNDS;
    const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
    const producerText = `${PRODUCER} producer, ${STREAMS} streams${PRODUCER === 'recorder' ? `, ${BATCH} changes per transaction` : ''}${RATE ? `, paced at ${RATE}/s` : ''}`;
    process.stdout.write(
      `\nDelivery benchmark: ${ROUNDS} rounds of ${COUNT} LEARNING_OPPORTUNITY_PUBLISHED events -> 1 receiver on 127.0.0.1 (${SECRET ? 'signed' : 'unsigned'})\n` +
        `PostgreSQL ${version[0]?.server_version} (${env.DATABASE_URL ? 'DATABASE_URL server' : 'embedded'}), Node ${process.version}; ` +
        `per-receiver concurrency ${concurrency}, worker concurrency ${config.workerConcurrency}\n` +
        `live producers (${producerText}): ${results.map((r) => `${(r.commits / r.commitSeconds).toFixed(0)}/s`).join(', ')} committed; baseline failures: ${results.reduce((n, r) => n + r.failed, 0)}\n` +
        `worker attempts (all rounds): ${attempts.map((a) => `${a.outcome} ${a.n} (attempt <= ${a.max_attempt})`).join(', ')}\n` +
        `ratio backlog drain / bare all at once, per round: ${results.map((r) => `${r.ratio.toFixed(2)}x`).join(', ')}\n` +
        `CPU per delivery (medians): backlog drain: this process (the worker) ${cpuMedian((c) => c.drainProcess)}, PostgreSQL ${cpuMedian((c) => c.drainDatabase)}; ` +
        `bare loop: this process ${cpuMedian((c) => c.bareProcess)}\n\n` +
        `median of ${ROUNDS} rounds (delivered, duplicates: totals)\n` +
        `${table([liveRun!, occurredRun!, drainRun!, replayRun!, burstRun!])}\n\n` +
        `latency = receipt (whole body read by the receiver) - commit (the producing transaction had committed)\n` +
        `deliveries/s = distinct events received / (last receipt - first commit, worker start or release)\n` +
        `targets (medians):\n` +
        `  >= ${TARGETS.perSecond} deliveries/s (backlog drain)  : ${verdict(drainRun!.perSecond >= TARGETS.perSecond && delivered(drainRun!))} (${drainRun!.perSecond.toFixed(0)}/s, ${drainRun!.delivered}/${COUNT * ROUNDS} delivered)\n` +
        `  drain >= ${TARGETS.ratio}x bare baseline at once   : ${verdict(ratio >= TARGETS.ratio)} (${ratio.toFixed(2)}x)\n` +
        `  p50 <= ${TARGETS.p50Ms} ms (live, from commit)      : ${verdict((liveRun!.p50 ?? Infinity) <= TARGETS.p50Ms)} (${liveRun!.p50?.toFixed(1)} ms)\n` +
        `  p99 <= ${TARGETS.p99Ms} ms (live, from commit)       : ${verdict((liveRun!.p99 ?? Infinity) <= TARGETS.p99Ms && delivered(liveRun!))} (${liveRun!.p99?.toFixed(1)} ms, ${liveRun!.delivered}/${COUNT * ROUNDS} delivered)\n` +
        orderingReport(ordering, { count: COUNT, targets: TARGETS }) +
        (await viewFanOut()),
    );
  } finally {
    await cleanup();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
