// Filtered, searched, re-sorted, projected and faceted lists (docs/contract.md, "Filters"), in plain SQL on the
// read pool, for REST (catalog/list-parameters.ts) and GraphQL alike: one statement per page
// (list-sql.ts), its answer as the page's bytes and entity tag. The query model is list-model.ts.
// The unfiltered list never comes here: it keeps its own fast path (read-model.ts).
import { createHash } from 'node:crypto';
import type { Queryable } from '../db/read-replicas.ts';
import type { BoundedReads } from '../db/deadline-reads.ts';
import type { QueryGate } from '../kernel/query-gate.ts';
import { AppError } from '../kernel/errors.ts';
import type { FacetCounts, ListFacet, ListPage, ListQuery } from './list-model.ts';
import { listStatement } from './list-sql.ts';
import { PAGE_MAX_BYTES_DEFAULT, pageBudget, type Visibility } from './read-model.ts';

export * from './list-model.ts';
export { listStatement } from './list-sql.ts';

type ListRow = { total: string; docs: string | null; digests: string | null; n: number } & Record<
  `facet_${ListFacet}`,
  [string, string][] | undefined
>;

/** The canonical text of a query (its entity tag's input): equal queries give equal text. */
const canonical = (query: ListQuery): string =>
  JSON.stringify([query.filter, query.q, query.sort, query.fields, query.facets]);

export type ListReads = ReturnType<typeof createListReads>;

/**
 * Where the API runs its list reads: admission per key and per process (kernel/query-gate.ts), and
 * reads on the query class's own connections, cancelled in PostgreSQL at their deadline (`ms`, at most
 * DB_READ_TIMEOUT_MS; omitted: that) or when `signal` aborts (db/deadline-reads.ts).
 */
export type QueryClass = { gate: QueryGate; reads: (signal?: AbortSignal, ms?: number) => BoundedReads };
/**
 * Who asks: the key whose slots the read takes, and a signal that aborts when the client goes away.
 * `holdUntil`: the slot is also kept until it settles (the calendar keeps it through its rendering,
 * so that the query class's limits bound the renders too: http/v1/calendar.ts). `deadline`: the
 * instant (performance.now()) by which the caller's reads must end, shared by all of them (a GraphQL
 * request's aliases: each had a deadline of its own, and ten of them held a slot for ten deadlines).
 */
export type ListCaller = { keyId: string; signal?: AbortSignal; holdUntil?: Promise<void>; deadline?: number };

/** What a filtered page keeps of its byte budget for the facets (at most 5 x 20 values). */
const FACETS_RESERVE_BYTES = 63 * 1024;

/**
 * `on`: the API's query class, or a plain Queryable (tools and tests: no admission, no deadline).
 * `pageMaxBytes`: PAGE_MAX_BYTES, the bound of a REST list page's bytes (GraphQL pages pass `bounded: false`).
 */
export function createListReads(on: QueryClass | Queryable, pageMaxBytes = PAGE_MAX_BYTES_DEFAULT) {
  // The plain list's budget (the envelope kept out, read-model.ts), less the facets' reserve.
  const budget = pageBudget(pageMaxBytes) - FACETS_RESERVE_BYTES;
  return {
    /** One page of a filtered list; `etag` changes with any byte of the answer. */
    async getPage(
      query: ListQuery,
      limit: number,
      offset: number,
      visibility: Visibility,
      caller: ListCaller,
      bounded = true,
    ): Promise<ListPage> {
      const statement = listStatement(query, limit, offset, visibility, bounded ? budget : null);
      let rows: ListRow[];
      if ('gate' in on) {
        const left = () =>
          caller.deadline === undefined ? undefined : Math.floor(caller.deadline - performance.now());
        if ((left() ?? 1) <= 0) throw requestDeadlinePassed();
        // The time left is read once admitted: worked out before the wait in line, a statement could
        // outlive the request's deadline by that wait.
        let reads: ReturnType<typeof on.reads> | undefined;
        const read = () => {
          const ms = left();
          if (ms !== undefined && ms <= 0) throw requestDeadlinePassed();
          reads = on.reads(caller.signal, ms);
          return reads.query<ListRow>(statement);
        };
        const ended = () => Promise.all([reads?.ended(), caller.holdUntil]).then(() => {});
        ({ rows } = await on.gate.run(caller.keyId, read, caller.signal, ended));
      } else ({ rows } = await on.query<ListRow>(statement));
      const row = rows[0]!;
      const facets: FacetCounts | null = query.facets.length ? {} : null;
      for (const f of query.facets)
        facets![f] = (row[`facet_${f}`] ?? []).map(([value, n]) => ({ value, count: Number(n) }));
      const totalCount = Number(row.total);
      const etag = createHash('md5')
        .update(
          `${canonical(query)}:${visibility}:${totalCount}:${limit}:${offset}:${row.digests ?? ''}:${JSON.stringify(facets)}`,
        )
        .digest('hex');
      return { totalCount, limit, offset, count: Number(row.n ?? 0), results: row.docs ?? '', facets, etag };
    },
  };
}

const requestDeadlinePassed = (): AppError =>
  new AppError(
    'SERVICE_UNAVAILABLE',
    'The request’s reads did not finish within DB_READ_TIMEOUT_MS; try again shortly',
    {
      headers: { 'Retry-After': '1' },
    },
  );

/** The list response body: the page's bytes as stored (or projected), then pagination, then facets. */
export function renderListPage(page: ListPage): string {
  const facets = page.facets ? `,"facets":${JSON.stringify(page.facets)}` : '';
  // `next` and `hasMore` as on the plain list (read-model.ts renderPage): a walk continues from `next`.
  const next = page.offset + page.count;
  return `{"results":[${page.results}],"pagination":{"totalCount":${page.totalCount},"limit":${page.limit},"offset":${page.offset},"next":${next},"hasMore":${next < page.totalCount}}${facets}}`;
}
