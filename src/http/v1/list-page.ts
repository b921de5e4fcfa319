// The filtered list of /v1 (docs/contract.md, "Filters"): paging and list parameters read together (every bad
// value of both in one 400), and a page answered with ETag, Cache-Control and 304 like every list.
// The plain list (no filter, default sort, whole records, no facets) never comes here: learning-opportunities.ts
// serves it through its own fast path, byte for byte what it was before these parameters.
import type { ServerResponse } from 'node:http';
import { AppError, badInput, type InvalidParam } from '../../kernel/errors.ts';
import { type ListCaller, type ListQuery, type ListReads, renderListPage } from '../../catalog/list-query.ts';
import { parsePagingQuery } from '../../kernel/paging.ts';
import { sendCacheable } from '../conditional.ts';
import { parseListParameters } from '../../catalog/list-parameters.ts';

const problemsOf = (read: () => void): InvalidParam[] => {
  try {
    read();
    return [];
  } catch (error) {
    if (error instanceof AppError && error.invalidParams) return error.invalidParams;
    throw error;
  }
};

/** limit, offset and the list parameters of a parsed query string; a 400 names every bad one. */
export function parseListQuery(raw: Record<string, unknown>): { limit: number; offset: number; list: ListQuery } {
  let paging = { limit: 0, offset: 0 };
  let list: ListQuery | undefined;
  const problems = [
    ...problemsOf(() => (paging = parsePagingQuery(raw))),
    ...problemsOf(() => (list = parseListParameters(raw))),
  ];
  if (problems.length) throw badInput(problems);
  return { ...paging, list: list! };
}

/** Answers one page of a filtered list; `held`: the client's entity tags ('*': any). */
export async function serveListPage(
  lists: ListReads,
  res: ServerResponse,
  list: ListQuery,
  limit: number,
  offset: number,
  held: string[] | '*' | null,
  caller: ListCaller,
): Promise<void> {
  const page = await lists.getPage(list, limit, offset, 'public', caller);
  if (held === '*' || held?.includes(page.etag)) return sendCacheable(res, page.etag, null);
  sendCacheable(res, page.etag, renderListPage(page));
}
