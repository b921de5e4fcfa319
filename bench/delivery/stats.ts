// Percentiles and the printed comparison table.

export type Run = {
  name: string;
  delivered: number;
  /** From the first moment a change was available (commit or release) to the last receipt. */
  spanMs: number;
  /** Receipt minus availability, per delivery (ms). */
  latenciesMs: number[] | null;
  duplicates: number;
};

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export function summarize(run: Run) {
  const sorted = run.latenciesMs ? [...run.latenciesMs].sort((a, b) => a - b) : null;
  return {
    name: run.name,
    delivered: run.delivered,
    perSecond: run.delivered / (run.spanMs / 1000),
    p50: sorted ? percentile(sorted, 50) : null,
    p90: sorted ? percentile(sorted, 90) : null,
    p99: sorted ? percentile(sorted, 99) : null,
    max: sorted ? sorted[sorted.length - 1]! : null,
    duplicates: run.duplicates,
  };
}

export type Summary = ReturnType<typeof summarize>;

const ms = (v: number | null) => (v === null ? '-' : v < 10 ? v.toFixed(1) : v.toFixed(0));

export function table(rows: Summary[]): string {
  const header = ['', 'delivered', 'deliveries/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'duplicates'];
  const cells = rows.map((r) => [
    r.name,
    String(r.delivered),
    r.perSecond.toFixed(0),
    ms(r.p50),
    ms(r.p90),
    ms(r.p99),
    ms(r.max),
    String(r.duplicates),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  return [line(header), ...cells.map(line)].join('\n');
}
