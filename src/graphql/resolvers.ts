// Thin resolvers: authorize, validate, call the same reads and writes as REST, present.
import type { Principal } from '../auth/api-keys.ts';
import { requireScope } from '../auth/bearer.ts';
import type { CatalogWrites } from '../catalog/catalog-writes.ts';
import { parseBatch, parseLearningOpportunityInput } from '../catalog/input.ts';
import { AppError } from '../kernel/errors.ts';
import { parseId } from '../kernel/ids.ts';
import type { CatalogReads } from '../catalog/read-model.ts';
import { parsePagingArgs } from '../kernel/paging.ts';
import { isPlainList, type ListReads } from '../catalog/list-query.ts';
import { parseListArguments } from './list-arguments.ts';
import type { EventAttemptsLoader } from './event-attempts-loader.ts';
import { selectsStoredRecords, type StoredPages } from './stored-results.ts';
import type { GraphQLResolveInfo } from 'graphql';

/** Made per request (service.ts): the caller, and loaders whose batches never span requests. */
export type GraphQLContext = {
  principal: Principal;
  /** Aborts when the client goes away before its answer is complete: expensive reads stop then. */
  signal?: AbortSignal;
  eventAttempts: EventAttemptsLoader;
  /** Set while compiled-execution.ts runs a query: pages whose stored bytes are the answer (stored-results.ts). */
  storedPages?: StoredPages;
  /** The request's last search, filter or facet read (inTurn). */
  queryTurn?: Promise<unknown>;
  /** The refusal of one of them, once one was not admitted (inTurn). */
  queryRefused?: AppError;
  /** The instant (performance.now()) by which the request's search, filter and facet reads must end. */
  deadline?: number;
};
type Args = Record<string, unknown>;

/**
 * Runs a request's search, filter and facet reads one after another, so that a request holds at most
 * one of its key's query slots (kernel/query-gate.ts): three aliases of learningOpportunities in one
 * document against QUERY_MAX_CONCURRENT_PER_KEY 2 waited for slots the request itself held, and the
 * third was refused, losing the whole answer. A read that fails does not stop the next, but once one
 * was refused a slot (429) the later ones are refused at once: each waited in line again, and the
 * answer took one QUERY_QUEUE_WAIT_MS per alias (found from outside: 5 s for six aliases).
 */
function inTurn<T>(ctx: GraphQLContext, read: () => Promise<T>): Promise<T> {
  const mine = (ctx.queryTurn ?? Promise.resolve()).then(() => {
    if (ctx.queryRefused) throw ctx.queryRefused;
    return read();
  });
  ctx.queryTurn = mine.catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'RATE_LIMITED') ctx.queryRefused ??= error;
  });
  return mine;
}

export function catalogResolvers(deps: { reads: CatalogReads; writes: CatalogWrites; lists: ListReads }) {
  const reader = (ctx: GraphQLContext) => requireScope(ctx.principal, 'graphql:read');
  const writer = (ctx: GraphQLContext) => requireScope(ctx.principal, 'catalog:write');
  const write = (run: (args: Args) => Promise<string>) => async (_: unknown, args: Args, ctx: GraphQLContext) => {
    writer(ctx);
    return JSON.parse(await run(args)) as unknown;
  };
  const writeMany = (run: (args: Args) => Promise<string[]>) => async (_: unknown, args: Args, ctx: GraphQLContext) => {
    writer(ctx);
    return (await run(args)).map((doc) => JSON.parse(doc) as unknown);
  };

  return {
    Query: {
      async learningOpportunity(_: unknown, args: Args, ctx: GraphQLContext) {
        reader(ctx);
        const doc = await deps.reads.getOne(parseId(args.id), 'internal', ctx.signal);
        return doc === null ? null : (JSON.parse(doc) as unknown);
      },
      async learningOpportunities(_: unknown, args: Args, ctx: GraphQLContext, info: GraphQLResolveInfo) {
        reader(ctx);
        const { limit, offset } = parsePagingArgs(args);
        const list = parseListArguments(args);
        const page = isPlainList(list)
          ? { ...(await deps.reads.getPage(limit, offset, 'internal', ctx.signal)), facets: null }
          : await inTurn(ctx, () =>
              deps.lists.getPage(
                list,
                limit,
                offset,
                'internal',
                {
                  keyId: ctx.principal.keyId,
                  ...(ctx.signal ? { signal: ctx.signal } : {}),
                  ...(ctx.deadline ? { deadline: ctx.deadline } : {}),
                },
                false,
              ),
            );
        const text = `[${page.results}]`;
        let results: unknown;
        if (ctx.storedPages && selectsStoredRecords(info)) {
          ctx.storedPages.set(String(info.path.key), text);
          results = [];
        } else results = JSON.parse(text);
        // The filtered page counts its records; the plain internal one holds them all up to the end.
        const count = 'count' in page ? page.count : Math.max(0, Math.min(limit, page.totalCount - offset));
        const next = page.offset + count;
        return {
          results,
          pagination: {
            totalCount: page.totalCount,
            limit: page.limit,
            offset: page.offset,
            next,
            hasMore: next < page.totalCount,
          },
          facets: page.facets,
        };
      },
    },
    Mutation: {
      upsertLearningOpportunity: write((args) => deps.writes.upsert(parseLearningOpportunityInput(args.input))),
      publishLearningOpportunity: write((args) => deps.writes.publish(parseId(args.id))),
      upsertLearningOpportunities: writeMany((args) =>
        deps.writes.upsertMany(
          parseBatch(args.inputs, 'inputs', (input, name) => parseLearningOpportunityInput(input, name)),
        ),
      ),
      publishLearningOpportunities: writeMany((args) =>
        deps.writes.publishMany(parseBatch(args.ids, 'ids', (id, name) => parseId(id, name))),
      ),
      archiveLearningOpportunity: write((args) => deps.writes.archive(parseId(args.id))),
      deleteLearningOpportunity: write((args) => deps.writes.delete(parseId(args.id))),
    },
  };
}
