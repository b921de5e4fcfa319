// The profile behind bench:query's rows: EXPLAIN (ANALYZE, BUFFERS) of each query's statement (as
// REST runs it, with the page's byte budget) on a kept bench database, the seed's `now` read from it.
// `node --conditions=lods-source bench/query/explain.ts [regexp of query names]` with
// BENCH_QUERY_DATABASE_URL set; prints each plan and its execution time. Runs no migration. Its
// session starts with the service's settings (no JIT), so the plans are those the service runs.
import { parse as parseQuery } from 'node:querystring';
import pg from 'pg';
import { isPlainList, listStatement } from '../../src/catalog/list-query.ts';
import { PAGE_MAX_BYTES_DEFAULT, PAGE_SQL, pageBudget } from '../../src/catalog/read-model.ts';
import { parseListQuery } from '../../src/http/v1/list-page.ts';
import { SESSION_OPTIONS } from '../../src/db/session-settings.ts';
import { benchQueries } from './queries.ts';

const url = process.env.BENCH_QUERY_DATABASE_URL;
if (!url) throw new Error('BENCH_QUERY_DATABASE_URL: the kept bench database');
const only = process.argv[2] ? new RegExp(process.argv[2]) : null;
const pool = new pg.Pool({ connectionString: url, max: 1, options: SESSION_OPTIONS });
try {
  const kept = (await pool.query<{ now: Date }>('select now from bench_query_seed')).rows[0]?.now;
  for (const { name, query } of benchQueries(kept ?? new Date()).filter((q) => !only || only.test(q.name))) {
    const { limit, offset, list } = parseListQuery(parseQuery(query));
    const budget = pageBudget(PAGE_MAX_BYTES_DEFAULT);
    const statement = isPlainList(list)
      ? { text: PAGE_SQL.public, values: [limit, offset, null, budget] }
      : listStatement(list, limit, offset, 'public', budget);
    const { rows } = await pool.query<{ 'QUERY PLAN': string }>({
      text: `explain (analyze, buffers) ${statement.text}`,
      values: statement.values,
    });
    process.stdout.write(`=== ${name} (${query})\n${rows.map((r) => r['QUERY PLAN']).join('\n')}\n\n`);
  }
} finally {
  await pool.end();
}
