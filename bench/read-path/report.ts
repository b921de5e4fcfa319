// The printed result: every figure beside the baseline, the ratio, and PASS/FAIL against the targets.
import type { CountCost } from './count-cost.ts';
import type { DeepOffset } from './deep-offset.ts';
import type { LoadResult } from './load.ts';
import type { ScalingFigures } from './scaling.ts';
import type { PageLatency, WalkResult } from './walk.ts';

export type Figures = {
  getOne: { service: LoadResult; baseline: LoadResult };
  list: { service: LoadResult; baseline: LoadResult };
  walk: { service: WalkResult; baseline: WalkResult };
  pages: { service: PageLatency; baseline: PageLatency };
  deepOffset: DeepOffset;
  count: { small: CountCost; large: CountCost };
  scaling: ScalingFigures;
};

type Row = {
  measure: string;
  service: string;
  baseline: string;
  ratio: string;
  target: string;
  verdict: '' | 'PASS' | 'FAIL';
};

const f = (n: number, digits = 1) => n.toFixed(digits);
const verdict = (ok: boolean): 'PASS' | 'FAIL' => (ok ? 'PASS' : 'FAIL');
// Sub-millisecond timings jitter by a few hundredths of a millisecond on their own.
const COUNT_SLACK_MS = 0.05;

const cpuRow = (measure: string, service: number | null, baseline: number | null): Row[] =>
  service === null || baseline === null
    ? []
    : [
        {
          measure,
          service: f(service, 0),
          baseline: f(baseline, 0),
          ratio: f(service / baseline, 2),
          target: '',
          verdict: '',
        },
      ];

export function buildRows(x: Figures): Row[] {
  // `failuresAllowed`: a 304 is not a 2xx for autocannon, though it is the expected answer.
  const load = (
    name: string,
    r: { service: LoadResult; baseline: LoadResult },
    min: number,
    failuresAllowed = false,
  ): Row[] => {
    const ratio = r.service.rps / r.baseline.rps;
    const clean = failuresAllowed || (r.service.failures === 0 && r.baseline.failures === 0);
    return [
      {
        measure: `${name} throughput (req/s)`,
        service: f(r.service.rps, 0),
        baseline: f(r.baseline.rps, 0),
        ratio: f(ratio, 2),
        target: `>= ${min}x`,
        verdict: verdict(ratio >= min && clean),
      },
      {
        measure: `${name} latency p50 (ms)`,
        service: f(r.service.p50),
        baseline: f(r.baseline.p50),
        ratio: f(r.service.p50 / r.baseline.p50, 2),
        target: '',
        verdict: '',
      },
      {
        measure: `${name} latency p99 (ms)`,
        service: f(r.service.p99),
        baseline: f(r.baseline.p99),
        ratio: f(r.service.p99 / r.baseline.p99, 2),
        target: '',
        verdict: '',
      },
      ...cpuRow(`${name} server CPU per request (µs)`, r.service.cpuUsPerRequest, r.baseline.cpuUsPerRequest),
      ...cpuRow(`${name} database CPU per request (µs)`, r.service.dbCpuUsPerRequest, r.baseline.dbCpuUsPerRequest),
      ...cpuRow(
        `${name} load generator CPU per request (µs)`,
        r.service.clientCpuUsPerRequest,
        r.baseline.clientCpuUsPerRequest,
      ),
    ];
  };
  const walkRatio = x.walk.service.totalMs / x.walk.baseline.totalMs;
  const deep = (p: PageLatency) => p.lastMs / p.firstMs;
  const { small, large } = x.count;
  const countOk =
    large.catalogRowsRead === 0 &&
    small.catalogRowsRead === 0 &&
    large.counterRowsRead === small.counterRowsRead &&
    large.countMs <= small.countMs * 1.5 + COUNT_SLACK_MS;
  return [
    ...load('GET one', x.getOne, 0.9),
    ...load('list limit=100', x.list, 1.0),
    // Scaling rows: "service" is the variant, "baseline" the service without it (same run).
    ...load('GET one 304 vs 200', x.scaling.notModified, 1.2, true),
    ...load('GET one limits on vs off (side by side, median round)', x.scaling.limitsOn, 0.95),
    {
      measure: 'GET one, two identical services side by side (noise floor)',
      service: f(x.scaling.noiseFloor.service.rps, 0),
      baseline: f(x.scaling.noiseFloor.baseline.rps, 0),
      ratio: f(x.scaling.noiseFloor.service.rps / x.scaling.noiseFloor.baseline.rps, 2),
      target: '',
      verdict: '',
    },
    {
      measure: 'GET one, 2 processes vs 1 (req/s)',
      service: f(x.scaling.twoProcesses.two, 0),
      baseline: f(x.scaling.twoProcesses.one, 0),
      ratio: f(x.scaling.twoProcesses.two / x.scaling.twoProcesses.one, 2),
      target: '',
      verdict: '',
    },
    {
      measure: `full walk, ${x.walk.service.pages} pages (s)`,
      service: f(x.walk.service.totalMs / 1000, 2),
      baseline: f(x.walk.baseline.totalMs / 1000, 2),
      ratio: f(walkRatio, 2),
      target: '<= 1.5x',
      verdict: verdict(walkRatio <= 1.5),
    },
    {
      measure: 'first page, offset 0 (ms)',
      service: f(x.pages.service.firstMs, 2),
      baseline: f(x.pages.baseline.firstMs, 2),
      ratio: f(x.pages.service.firstMs / x.pages.baseline.firstMs, 2),
      target: '',
      verdict: '',
    },
    {
      measure: `last page, offset ${x.pages.service.lastOffset} (ms)`,
      service: f(x.pages.service.lastMs, 2),
      baseline: f(x.pages.baseline.lastMs, 2),
      ratio: f(x.pages.service.lastMs / x.pages.baseline.lastMs, 2),
      target: '',
      verdict: '',
    },
    {
      measure: 'last page / first page',
      service: `${f(deep(x.pages.service), 2)}x`,
      baseline: `${f(deep(x.pages.baseline), 2)}x`,
      ratio: '',
      target: '<= 1.5x',
      verdict: verdict(deep(x.pages.service) <= 1.5),
    },
    {
      measure: `DB: page at offset 0 / ${x.deepOffset.lastOffset} (ms)`,
      service: `${f(x.deepOffset.ranges.firstMs, 2)} / ${f(x.deepOffset.ranges.lastMs, 2)}`,
      baseline: `plain OFFSET ${f(x.deepOffset.plain.firstMs, 2)} / ${f(x.deepOffset.plain.lastMs, 2)}`,
      ratio: '',
      target: '',
      verdict: '',
    },
    {
      measure: `totalCount at ${small.records} records (ms)`,
      service: f(small.countMs, 3),
      baseline: `count(*) ${f(small.naiveCountMs, 2)}`,
      ratio: '',
      target: '',
      verdict: '',
    },
    {
      measure: `totalCount at ${large.records} records (ms)`,
      service: f(large.countMs, 3),
      baseline: `count(*) ${f(large.naiveCountMs, 2)}`,
      ratio: f(large.countMs / small.countMs, 2),
      target: 'size-independent',
      verdict: verdict(countOk),
    },
    {
      measure: 'rows its plan reads (catalog | counter)',
      service: `${small.catalogRowsRead} | ${small.counterRowsRead} -> ${large.catalogRowsRead} | ${large.counterRowsRead}`,
      baseline: '',
      ratio: '',
      target: 'no table scan',
      verdict: '',
    },
    {
      measure: `list statement, limit=1 (ms)`,
      service: `${f(small.listLimit1Ms, 2)} -> ${f(large.listLimit1Ms, 2)}`,
      baseline: '',
      ratio: f(large.listLimit1Ms / small.listLimit1Ms, 2),
      target: '',
      verdict: '',
    },
  ];
}

export function printReport(rows: Row[], write: (line: string) => void): boolean {
  const header: Row = {
    measure: 'measure',
    service: 'service',
    baseline: 'baseline',
    ratio: 'ratio',
    target: 'target',
    verdict: '',
  };
  const keys = ['measure', 'service', 'baseline', 'ratio', 'target', 'verdict'] as const;
  const widths = keys.map((k) => Math.max(...[header, ...rows].map((r) => r[k].length)));
  const line = (r: Row) =>
    keys
      .map((k, i) => (i === 0 ? r[k].padEnd(widths[i]!) : r[k].padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = '-'.repeat(widths.reduce((a, b) => a + b + 2, -2));
  write(rule);
  write(line(header));
  write(rule);
  for (const r of rows) write(line(r));
  write(rule);
  const failed = rows.filter((r) => r.verdict === 'FAIL');
  if (failed.length === 0) {
    write('RESULT: ALL TARGETS PASS');
  } else {
    write('#'.repeat(rule.length));
    write(`### RESULT: ${failed.length} TARGET(S) FAIL:`);
    for (const r of failed)
      write(
        `###   FAIL  ${r.measure}: service ${r.service}, baseline ${r.baseline} ${r.ratio ? `(ratio ${r.ratio})` : ''}, target ${r.target}`,
      );
    write('#'.repeat(rule.length));
  }
  return failed.length === 0;
}
