// For the delivery probes: wraps a pool's query() to time every statement by its name (or the first
// 40 characters of its text): calls, total and longest ms, and rows per call (the length of its first
// array parameter, the batch a statement took). `after` sees each statement once it has returned.
import type { Pool } from 'pg';

export type StatementStats = { n: number; ms: number; max: number; rows: number };
type Query = { name?: string; text?: string; values?: unknown[] };

export function timeStatements(pool: Pool, after?: (name: string, query: Query) => void): Map<string, StatementStats> {
  const stats = new Map<string, StatementStats>();
  const original = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: unknown }).query = async (...args: unknown[]) => {
    const q = args[0] as Query | string;
    const name = typeof q === 'string' ? q.trim().slice(0, 40) : (q.name ?? q.text?.trim().slice(0, 40) ?? '?');
    const t = performance.now();
    try {
      return await original(...args);
    } finally {
      const ms = performance.now() - t;
      const s = stats.get(name) ?? { n: 0, ms: 0, max: 0, rows: 0 };
      s.n++;
      s.ms += ms;
      s.max = Math.max(s.max, ms);
      const first = typeof q === 'string' ? undefined : q.values?.[0];
      s.rows += Array.isArray(first) ? first.length : 0;
      stats.set(name, s);
      if (typeof q !== 'string') after?.(name, q);
    }
  };
  return stats;
}
