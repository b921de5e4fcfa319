// GET /v1/learning-opportunities/{id} and GET /v1/learning-opportunities (the record and the list
// page), most of the load: served on node:http by the dispatcher (dispatcher.ts), which has
// already admitted the key (admission.ts), so a 400 or 404 is only ever shown to a caller whose key
// holds catalog:read. A record and every list item are the stored bytes; a matching If-None-Match
// is a 304 (conditional.ts). Every problem goes back to the dispatcher's one problem writer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseId } from '../../kernel/ids.ts';
import { type CatalogReads, pageOf, renderedPageBytes, renderPage } from '../../catalog/read-model.ts';
import { notFound } from '../../kernel/errors.ts';
import { heldTags, sendCacheable } from '../conditional.ts';
import { isPlainList, type ListReads } from '../../catalog/list-query.ts';
import { parseListQuery, serveListPage } from './list-page.ts';
import { badPathEncoding } from '../problem.ts';
import type { V1Serve } from './routes.ts';
import { closedSignal } from '../closed-signal.ts';
import { parseQueryString } from '../../kernel/query-string.ts';

const ONE_PREFIX = '/v1/learning-opportunities/';

type Deps = { reads: CatalogReads; lists: ListReads };

/** The list and the record, as the dispatcher calls them. */
export function learningOpportunityEndpoints(deps: Deps): { list: V1Serve; one: V1Serve } {
  return {
    list: (req, res, at) => servePage(deps, req, res, at.query, at.principal!.keyId),
    one: async (req, res, at) => {
      // The record takes no parameter and ignores unknown ones, but one that no stored text could
      // hold (a NUL) or that does not decode is a 400 naming it, as on every /v1 path.
      parseQueryString(at.query);
      return serveRecord(deps, req, res, at.path.slice(ONE_PREFIX.length));
    },
  };
}

// With If-None-Match, the read leaves the body out when the stored tag matches (`held`); `*`
// matches any tag, so the body is not needed either.
async function serveRecord(deps: Deps, req: IncomingMessage, res: ServerResponse, segment: string): Promise<void> {
  const id = parseId(decodeSegment(segment));
  const held = heldTags(req.headers['if-none-match']);
  // Cancelled in PostgreSQL when the client goes away, as every read of a request.
  const row = await deps.reads.conditional.getOne(id, held, closedSignal(res));
  if (!row) throw notFound(`Learning opportunity ${id}`);
  sendCacheable(res, row.etag, held === '*' ? null : row.doc, row.doc_bytes);
}

async function servePage(
  deps: Deps,
  req: IncomingMessage,
  res: ServerResponse,
  query: string,
  keyId: string,
): Promise<void> {
  const { limit, offset, list } = parseListQuery(parseQueryString(query));
  const held = heldTags(req.headers['if-none-match']);
  // Filters, search, fields or facets: the query class, admitted per key (kernel/query-gate.ts). The
  // plain list keeps its own fast path and connections. Both are cancelled when the client goes away.
  const signal = closedSignal(res);
  if (!isPlainList(list)) return serveListPage(deps.lists, res, list, limit, offset, held, { keyId, signal });
  const row = await deps.reads.conditional.getPage(limit, offset, held === '*' ? null : held, signal);
  if (held === '*' || row.docs === null) return sendCacheable(res, row.etag, null);
  const page = pageOf(row, limit, offset);
  const body = renderPage(page, row.n);
  sendCacheable(res, row.etag, body, renderedPageBytes(body, page, row.docs_bytes));
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badPathEncoding();
  }
}
