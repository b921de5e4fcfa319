// Throughput and latency under concurrent load, with autocannon's programmatic API.
import autocannon from 'autocannon';
import { processCpuMs, processTreeCpuMs } from './cpu.ts';

/**
 * cpuUsPerRequest: CPU time of the server process per completed request; dbCpuUsPerRequest: of the
 * database (postmaster and backends); clientCpuUsPerRequest: of the load generator (this process).
 * The three share the machine's cores, so together they say where a ratio comes from. Null without /proc.
 */
export type LoadResult = {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  failures: number;
  cpuUsPerRequest: number | null;
  dbCpuUsPerRequest: number | null;
  clientCpuUsPerRequest: number;
};

export type LoadSpec = {
  url: string;
  headers: Record<string, string>;
  /** Called once per request: spreads the load over many ids / pages (with per-request headers, e.g. If-None-Match, or a POST body). */
  nextPath: () => string | { path: string; headers: Record<string, string>; method?: 'GET' | 'POST'; body?: string };
  /** The server's process id, for its CPU time. */
  pid?: number;
  /** The database's postmaster, for its CPU time (with its backends). */
  databasePid?: number;
  connections: number;
  durationS: number;
};

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const cpuBefore = spec.pid === undefined ? null : processCpuMs(spec.pid);
  const dbBefore = spec.databasePid === undefined ? null : processTreeCpuMs(spec.databasePid);
  const clientBefore = process.cpuUsage();
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationS,
    headers: spec.headers,
    requests: [
      {
        method: 'GET',
        setupRequest: (req) => {
          const next = spec.nextPath();
          if (typeof next === 'string') return { ...req, path: next };
          return {
            ...req,
            path: next.path,
            headers: { ...req.headers, ...next.headers },
            ...(next.method ? { method: next.method } : {}),
            ...(next.body === undefined ? {} : { body: next.body }),
          };
        },
      },
    ],
  });
  const completed = result['2xx'] + result.non2xx;
  const cpuAfter = spec.pid === undefined ? null : processCpuMs(spec.pid);
  const dbAfter = spec.databasePid === undefined ? null : processTreeCpuMs(spec.databasePid);
  const client = process.cpuUsage(clientBefore);
  const perRequest = (before: number | null, after: number | null) =>
    before !== null && after !== null && completed > 0 ? ((after - before) * 1000) / completed : null;
  return {
    rps: completed / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: completed,
    failures: result.non2xx + result.errors + result.timeouts,
    cpuUsPerRequest: perRequest(cpuBefore, cpuAfter),
    dbCpuUsPerRequest: perRequest(dbBefore, dbAfter),
    clientCpuUsPerRequest: completed > 0 ? (client.user + client.system) / completed : 0,
  };
}

type Target = {
  name: string;
  url: string;
  pid: number;
  headers: Record<string, string>;
  nextPath?: LoadSpec['nextPath'];
};

/**
 * The pair of the round whose ratio (second / first) is the median, with the failures of every
 * round; logs each round's ratio. A round's pair was measured under the same conditions (back to
 * back, or side by side), so its ratio survives the machine speeding up or slowing down between
 * rounds, which the best round of each side, taken from different rounds, does not.
 */
function medianRound(
  targets: readonly [Target, Target],
  rounds: LoadResult[][],
  log: (line: string) => void,
): Map<string, LoadResult> {
  const ratio = (pair: LoadResult[]) => pair[1]!.rps / pair[0]!.rps;
  const median = [...rounds].sort((a, b) => ratio(a) - ratio(b))[(rounds.length - 1) >> 1]!;
  log(
    `  per round, ${targets[1].name} / ${targets[0].name}: ${rounds.map((r) => ratio(r).toFixed(2)).join(', ')} (median ${ratio(median).toFixed(2)})`,
  );
  const failures = (i: number) => rounds.reduce((sum, pair) => sum + pair[i]!.failures, 0);
  return new Map(targets.map((t, i) => [t.name, { ...median[i]!, failures: failures(i) }]));
}

/**
 * Warm-up (discarded), then `rounds` rounds of one run per target, back to back; the round with the
 * median ratio counts (medianRound).
 */
export async function compareUnderLoad(
  targets: readonly [Target, Target],
  nextPath: LoadSpec['nextPath'],
  options: { connections: number; durationS: number; warmupS: number; rounds: number; databasePid?: number },
  log: (line: string) => void,
): Promise<Map<string, LoadResult>> {
  for (const t of targets) {
    if (options.warmupS > 0)
      await runLoad({ nextPath, ...t, connections: options.connections, durationS: options.warmupS });
  }
  const rounds: LoadResult[][] = [];
  for (let round = 1; round <= options.rounds; round++) {
    const pair: LoadResult[] = [];
    // Every other round runs the targets in reverse (ABBA): a machine that speeds up or slows down
    // during a round favours neither side over the run.
    for (const i of round % 2 ? [0, 1] : [1, 0]) {
      const t = targets[i]!;
      const r = await runLoad({
        nextPath,
        ...t,
        connections: options.connections,
        durationS: options.durationS,
        databasePid: options.databasePid,
      });
      pair[i] = r;
      const cpu = `${r.cpuUsPerRequest === null ? '' : `  CPU µs/req: server ${r.cpuUsPerRequest.toFixed(0)}`}${r.dbCpuUsPerRequest === null ? '' : `, database ${r.dbCpuUsPerRequest.toFixed(0)}`}, load generator ${r.clientCpuUsPerRequest.toFixed(0)}`;
      log(
        `  round ${round} ${t.name.padEnd(8)} ${r.rps.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms${cpu}${r.failures ? `  FAILURES ${r.failures}` : ''}`,
      );
    }
    rounds.push(pair);
  }
  return medianRound(targets, rounds, log);
}

/**
 * Two services under load at the same time, half the connections each, for `rounds` rounds after a
 * warm-up: whatever else the machine does in a round, both feel it at the same moment, so the
 * ratio of their throughputs is the ratio of what a request costs each. For two variants of one
 * service whose difference is far smaller than this machine's swings from one 10-second run to the
 * next (measured back to back, two identical processes differed by up to 28%). The round with the
 * median ratio counts (medianRound). No database CPU: they share it.
 */
export async function compareSideBySide(
  targets: readonly [Target, Target],
  nextPath: LoadSpec['nextPath'],
  options: { connections: number; durationS: number; warmupS: number; rounds: number },
  log: (line: string) => void,
): Promise<Map<string, LoadResult>> {
  const connections = Math.max(1, Math.floor(options.connections / 2));
  const run = (durationS: number, reversed = false) =>
    Promise.all(
      (reversed ? [...targets].reverse() : targets).map((t) => runLoad({ nextPath, ...t, connections, durationS })),
    );
  if (options.warmupS > 0) await run(options.warmupS);
  const rounds: LoadResult[][] = [];
  for (let round = 1; round <= options.rounds; round++) {
    // Started in the other order every other round, in case the first started gets a head start.
    const results = round % 2 ? await run(options.durationS) : (await run(options.durationS, true)).reverse();
    rounds.push(results);
    const line = results
      .map(
        (r, i) =>
          `${targets[i]!.name} ${r.rps.toFixed(0)} req/s, server CPU ${r.cpuUsPerRequest?.toFixed(0) ?? '?'} µs/req`,
      )
      .join('  |  ');
    log(`  round ${round} side by side: ${line}  ratio ${(results[1]!.rps / results[0]!.rps).toFixed(2)}`);
  }
  return medianRound(targets, rounds, log);
}
