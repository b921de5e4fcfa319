// The ordering rows of bench:delivery (issue 20; docs/contract.md, "Delivery guarantees"), run once after the rounds:
//
//   spread:  BENCH_COUNT UPDATED changes over BENCH_COUNT / 4 records (4 versions each, so three of
//            every four wait in their lane behind the record's open delivery), committed with the
//            worker stopped, then drained; compared with the bare loop all at once on the same
//            bodies, run just before and just after (target: drain >= 0.5x bare). BENCH_ORDERED_ROUNDS
//            (3) such rounds, each with a backlog of its own, and the median of their ratios: one
//            drain of 2,000 lasts about half a second, and the bare loop beside it swung by 1.5x
//            between bursts a few seconds apart on the 2-core machine (ratios of 0.39x to 0.53x
//            for the same code in one half hour).
//   hot:     1,000 changes to one record committed with the worker stopped; the worker starts and
//            BENCH_COUNT / 3 other records are published live (paced at BENCH_RATE, 4 streams): their
//            commit-to-receipt latency (target p99 <= 20 ms), and how long the hot record took; just
//            before, the same live traffic to other records without the hot record (a control: what
//            the machine gives at that moment without it).
//   latest:  the receiver switched to LATEST_STATE; BENCH_COUNT changes over BENCH_COUNT / 10 records
//            committed with the worker stopped (an outage), then drained: deliveries sent vs changes.
import type { Database } from '../../src/app/database.ts';
import type { BaselineBody } from './baseline.ts';
import type { createCpuMeter } from './cpu.ts';
import { runBaseline } from './baseline.ts';
import type { ReceiverReport } from './receiver-process.ts';
import type { startServiceSide, Update } from './service-run.ts';
import { summarize, type Summary, table } from './stats.ts';
import { median } from '../read-path/http-client.ts';

type Service = Awaited<ReturnType<typeof startServiceSide>>;
type Receiver = {
  url: string;
  waitFor: (n: number) => Promise<void>;
  collect: () => Promise<Extract<ReceiverReport, { type: 'collected' }>>;
};
type Draft = { id: string; doc: string };

/** µs of CPU per delivery: this process (the worker, and in the hot row the live producers too) and PostgreSQL. */
type Cpu = { processUs: number; databaseUs: number | null };
export type OrderingRows = {
  /** The round of median ratio, with every round's ratio. */
  spread: SpreadRound & { ratios: number[]; records: number };
  /** `control`: the same live traffic just before, without the hot record. */
  /** Each round's CPU per delivery: the drain's worker and database, the bare loop's process (for the sum / bare ratio). */
  spreadCpu: { worker: number; database: number | null; bare: number }[];
  /** null with `spreadOnly` (BENCH_ONLY=ordered-drain). */
  hot: { live: Summary; control: Summary; hotChanges: number; hotDeliveredMs: number; cpu: Cpu } | null;
  latest: { changes: number; records: number; sent: number; drainMs: number } | null;
};

const now = () => performance.timeOrigin + performance.now();
const last = (arrivals: [string, number][]) => arrivals.reduce((max, [, at]) => Math.max(max, at), -Infinity);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cpuText = (c: Cpu) => `${c.processUs.toFixed(0)} µs + database ${c.databaseUs?.toFixed(0) ?? '-'} µs`;

/** Version `v` of a record's doc: its title changed, so every version is a real change (UPDATED). */
function version(doc: string, v: number): string {
  const changed = doc.replace('"title":"', `"title":"v${v} `);
  if (changed === doc) throw new Error('bench: a seeded doc without a title');
  return changed;
}

/** `versions` UPDATED changes per record, version-major (a batch of fewer than `records.length` never repeats a record). */
function updates(records: readonly Draft[], versions: number, from = 0): Update[] {
  const out: Update[] = [];
  for (let v = from + 1; v <= from + versions; v++)
    for (const r of records) out.push({ id: r.id, before: version(r.doc, v - 1), after: version(r.doc, v) });
  return out;
}

type OrderingContext = {
  db: Database;
  service: Service;
  receiver: Receiver;
  drafts: readonly Draft[];
  count: number;
  /** Rounds of the spread row (BENCH_ORDERED_ROUNDS). */
  orderedRounds: number;
  /** Only the spread row (the ordered drain), not the hot and LATEST_STATE rows. */
  spreadOnly?: boolean;
  batch: number;
  rate: number;
  secret: string | null;
  concurrency: number;
  timeoutMs: number;
  cpu: Awaited<ReturnType<typeof createCpuMeter>>;
  log: (line: string) => void;
};

/** `bareUs`: this process's CPU per delivery in the two bare bursts (their mean), to set beside the drain's worker + database. */
type SpreadRound = { drain: Summary; bare: Summary; ratio: number; cpu: Cpu; bareUs: number };

/** One round of the spread row: 4 versions of each record committed with the worker stopped; bare burst, drain, bare burst. */
async function spreadRound(
  ctx: OrderingContext,
  records: readonly Draft[],
  fromVersion: number,
  label: string,
): Promise<SpreadRound> {
  const { db, service, receiver, count, log } = ctx;
  const { rows: mark } = await db.pool.query<{ at: string }>('select clock_timestamp()::text as at');
  log(`ordering: spread backlog ${label}, ${count} changes over ${records.length} records, worker stopped...`);
  await service.commitUpdates(updates(records, 4, fromVersion), { streams: 4, batch: ctx.batch });
  const { rows: events } = await db.pool.query<{ id: string; type: string; body: string }>(
    'select id, type, body from event where occurred_at >= $1',
    [mark[0]!.at],
  );
  const bodies = events.map((e) => ({ eventId: e.id, type: e.type, body: Buffer.from(e.body) }));
  const burst = async () => {
    const meter = await ctx.cpu();
    const t0 = now();
    await runBaseline({
      url: receiver.url,
      secret: ctx.secret,
      bodies: bodies.map((b): BaselineBody => ({ ...b, releaseAtMs: t0 })),
      concurrency: ctx.concurrency,
      timeoutMs: ctx.timeoutMs,
    });
    const { processUs } = await meter(bodies.length);
    const { arrivals, duplicates } = await receiver.collect();
    const run = summarize({
      name: 'bare baseline: all at once',
      delivered: arrivals.length,
      spanMs: last(arrivals) - t0,
      latenciesMs: null,
      duplicates,
    });
    return { ...run, cpuUs: processUs };
  };
  const before = await burst();
  const drainMeter = await ctx.cpu();
  const drainStart = await service.drain();
  await receiver.waitFor(events.length);
  const cpu = await drainMeter(events.length);
  const drained = await receiver.collect();
  const drain = summarize({
    name: 'ordered drain, 4 versions per record',
    delivered: drained.arrivals.length,
    spanMs: last(drained.arrivals) - drainStart,
    latenciesMs: null,
    duplicates: drained.duplicates,
  });
  const after = await burst();
  const bare = {
    ...before,
    delivered: before.delivered + after.delivered,
    perSecond: (before.perSecond + after.perSecond) / 2,
  };
  const ratio = drain.perSecond / bare.perSecond;
  const bareUs = (before.cpuUs + after.cpuUs) / 2;
  const sumUs = cpu.processUs + (cpu.databaseUs ?? 0);
  log(
    `ordering: spread drain ${label} ${drain.perSecond.toFixed(0)}/s, bare ${before.perSecond.toFixed(0)}/s and ${after.perSecond.toFixed(0)}/s, ratio ${ratio.toFixed(2)}x; CPU per delivery: worker ${cpuText(cpu)} = ${sumUs.toFixed(0)} µs, bare loop ${bareUs.toFixed(0)} µs (${(sumUs / bareUs).toFixed(2)}x)`,
  );
  return { drain, bare, ratio, cpu, bareUs };
}

/**
 * Publishes `records` live (one change per transaction, 4 streams, paced at BENCH_RATE) with the worker
 * running, waits for them and `alsoExpected` other deliveries, and summarises the live changes' commit
 * to receipt; `arrivedAt` has every arrival.
 */
async function publishLive(
  ctx: OrderingContext,
  records: readonly Draft[],
  name: string,
  since: string,
  alsoExpected: number,
): Promise<{ live: Summary; arrivedAt: Map<string, number> }> {
  const { db, service, receiver } = ctx;
  const committed = await service.publishLive(
    records.map((r) => ({ id: r.id, doc: version(r.doc, 300) })),
    { producer: 'recorder', streams: 4, batch: 1, rate: ctx.rate },
  );
  await receiver.waitFor(alsoExpected + records.length);
  const { arrivals, duplicates } = await receiver.collect();
  const { rows: liveEvents } = await db.pool.query<{ id: string; resource_id: string }>(
    'select id, resource_id from event where resource_id = any($1::uuid[]) and occurred_at >= $2',
    [records.map((r) => r.id), since],
  );
  const arrivedAt = new Map(arrivals);
  const delivered = liveEvents.filter((e) => arrivedAt.has(e.id));
  const latencies = delivered.map((e) => arrivedAt.get(e.id)! - committed.get(e.resource_id)!);
  const spanMs = Math.max(...delivered.map((e) => arrivedAt.get(e.id)!)) - Math.min(...committed.values());
  return {
    live: summarize({ name, delivered: latencies.length, spanMs, latenciesMs: latencies, duplicates }),
    arrivedAt,
  };
}

export async function runOrderingRows(ctx: OrderingContext): Promise<OrderingRows> {
  const { db, service, receiver, drafts, count, log } = ctx;
  await service.stopWorker();
  await receiver.collect();

  // spread: rounds of bare, drain, bare on a backlog of their own
  const { rows: mark } = await db.pool.query<{ at: string }>('select clock_timestamp()::text as at');
  const spreadRecords = drafts.slice(0, Math.max(1, Math.floor(count / 4)));
  const rounds: SpreadRound[] = [];
  for (let round = 1; round <= ctx.orderedRounds; round++) {
    rounds.push(await spreadRound(ctx, spreadRecords, 100 + 10 * round, `round ${round}/${ctx.orderedRounds}`));
    await service.stopWorker();
  }
  const ratios = rounds.map((r) => r.ratio);
  const middle = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)]!;
  const spread = { ...middle, ratios, records: spreadRecords.length };
  const spreadCpu = rounds.map((r) => ({ worker: r.cpu.processUs, database: r.cpu.databaseUs, bare: r.bareUs }));
  if (ctx.spreadOnly) return { spread, spreadCpu, hot: null, latest: null };

  // hot, after a control: the same live traffic to other records without the hot record
  const controlRecords = drafts.slice(
    spreadRecords.length + Math.floor(count / 3),
    spreadRecords.length + 2 * Math.floor(count / 3),
  );
  log(`ordering: control, ${controlRecords.length} live changes without a hot record (paced at ${ctx.rate}/s)...`);
  await service.drain();
  const { live: control } = await publishLive(ctx, controlRecords, 'live, no hot record (control)', mark[0]!.at, 0);
  await service.stopWorker();
  const hotRecord = drafts[drafts.length - 1]!;
  const HOT = 1000;
  log(`ordering: hot record, ${HOT} changes committed with the worker stopped...`);
  await service.commitUpdates(updates([hotRecord], HOT, 200), { streams: 1, batch: 1 });
  const { rows: hotEvents } = await db.pool.query<{ id: string }>(
    'select id from event where resource_id = $1 and occurred_at >= $2',
    [hotRecord.id, mark[0]!.at],
  );
  const hotIds = new Set(hotEvents.map((e) => e.id));
  const liveRecords = drafts.slice(spreadRecords.length, spreadRecords.length + Math.floor(count / 3));
  log(
    `ordering: hot record draining beside ${liveRecords.length} live changes to other records (paced at ${ctx.rate}/s)...`,
  );
  const hotMeter = await ctx.cpu();
  const hotStart = await service.drain();
  const { live, arrivedAt } = await publishLive(ctx, liveRecords, 'live beside a hot record', mark[0]!.at, hotIds.size);
  const hotCpu = await hotMeter(hotIds.size + liveRecords.length);
  const hotDeliveredMs = Math.max(...[...hotIds].map((id) => arrivedAt.get(id) ?? Infinity)) - hotStart;
  log(
    `ordering: live p50 ${live.p50?.toFixed(1)} ms, p99 ${live.p99?.toFixed(1)} ms (control without the hot record: p99 ${control.p99?.toFixed(1)} ms); the hot record's ${hotIds.size} deliveries in ${hotDeliveredMs.toFixed(0)} ms; CPU per delivery: worker and producers ${cpuText(hotCpu)}`,
  );

  // latest
  await service.stopWorker();
  await db.pool.query(`update receiver set delivery_mode = 'latest_state'`);
  const latestRecords = drafts.slice(0, Math.max(1, Math.floor(count / 10)));
  const latestChanges = updates(latestRecords, 10, 400);
  log(
    `ordering: LATEST_STATE, ${latestChanges.length} changes over ${latestRecords.length} records during an outage (worker stopped)...`,
  );
  await service.commitUpdates(latestChanges, { streams: 4, batch: ctx.batch });
  const latestStart = await service.drain();
  await receiver.waitFor(latestRecords.length);
  // Anything more than one per record would follow within moments.
  await sleep(1000);
  const latestArrivals = await receiver.collect();
  await db.pool.query(`update receiver set delivery_mode = 'all_events'`);
  const latest = {
    changes: latestChanges.length,
    records: latestRecords.length,
    sent: latestArrivals.arrivals.length + latestArrivals.duplicates,
    drainMs: last(latestArrivals.arrivals) - latestStart,
  };
  log(
    `ordering: LATEST_STATE sent ${latest.sent} deliveries for ${latest.changes} changes to ${latest.records} records`,
  );
  return {
    spread,
    spreadCpu,
    hot: { live, control, hotChanges: hotIds.size, hotDeliveredMs, cpu: hotCpu },
    latest,
  };
}

/** The ordering rows' table and verdicts, as printed after the rounds (or alone with BENCH_ONLY=ordering). */
export function orderingReport(
  rows: OrderingRows,
  { count, targets }: { count: number; targets: { orderedRatio: number; besideHotP99Ms: number } },
): string {
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
  const { spread, spreadCpu, hot, latest } = rows;
  const sums = spreadCpu.map((c) => c.worker + (c.database ?? 0));
  const cpuLine =
    `  ordered drain, CPU per delivery per round: ${spreadCpu.map((c, i) => `worker ${c.worker.toFixed(0)} + database ${c.database?.toFixed(0) ?? '-'} = ${sums[i]!.toFixed(0)} µs against bare ${c.bare.toFixed(0)} µs (${(sums[i]! / c.bare).toFixed(2)}x)`).join('; ')}\n` +
    `  ordered drain, CPU per delivery (medians): worker ${median(spreadCpu.map((c) => c.worker)).toFixed(0)} µs, database ${median(spreadCpu.map((c) => c.database ?? 0)).toFixed(0)} µs, sum ${median(sums).toFixed(0)} µs; bare loop ${median(spreadCpu.map((c) => c.bare)).toFixed(0)} µs; sum / bare ${median(sums.map((s, i) => s / spreadCpu[i]!.bare)).toFixed(2)}x\n`;
  return (
    `\nordering rows (once, after the rounds)\n` +
    `${table([spread.drain, spread.bare, ...(hot ? [hot.live, hot.control] : [])])}\n` +
    `  ordered drain (${count} changes, 4 per record over ${spread.records} records) >= ${targets.orderedRatio}x bare, median of ${spread.ratios.length} rounds : ${verdict(spread.ratio >= targets.orderedRatio)} (${spread.ratio.toFixed(2)}x; rounds ${spread.ratios.map((r) => `${r.toFixed(2)}x`).join(', ')}; CPU per delivery in the median round: worker ${cpuText(spread.cpu)})\n` +
    cpuLine +
    (hot
      ? `  live p99 beside a hot record (${hot.hotChanges} changes, drained in ${hot.hotDeliveredMs.toFixed(0)} ms) <= ${targets.besideHotP99Ms} ms : ${verdict((hot.live.p99 ?? Infinity) <= targets.besideHotP99Ms)} (${hot.live.p99?.toFixed(1)} ms; the same traffic without it just before: ${hot.control.p99?.toFixed(1)} ms; CPU per delivery: worker and producers ${cpuText(hot.cpu)})\n`
      : '') +
    (latest
      ? `  LATEST_STATE after an outage: ${latest.sent} deliveries sent for ${latest.changes} changes to ${latest.records} records (drained in ${latest.drainMs.toFixed(0)} ms)\n`
      : '')
  );
}
