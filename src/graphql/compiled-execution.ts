// Queries run by graphql-jit's compiled executor (each distinct document compiled once, then plain
// JavaScript per request): a 100-record page with every field costs a third of graphql-js's
// field-by-field execution (bench/README.md, "GraphQL page"). Apollo's own checks have run before
// (parse, validation, the gate, cost/depth/alias limits, schema visibility); this only answers the
// operation instead of graphql-js, through Apollo's responseForOperation hook. An answer with any
// error is thrown away and the operation runs again in graphql-js, so every error keeps the shape,
// path and code it has always had (the queries are reads: running one twice changes nothing), except
// a refusal (refusal-status.ts: a read cancelled at its deadline, one not admitted, an outage): that
// is answered as it is, since running again would wait, queue and be counted a second time (a read
// held on a lock answered 503 after twice DB_READ_TIMEOUT_MS, its statement run twice).
// Mutations and subscriptions always run in graphql-js. A page that asks for every stored field is
// answered with the stored bytes (stored-results.ts).
import { HeaderMap, type ApolloServerPlugin, type GraphQLResponse } from '@apollo/server';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { GraphQLContext } from './resolvers.ts';
import { documentCache, DOCUMENTS_KEPT } from './document-cache.ts';
import { refusalAmong, refusalResult } from './refusal-status.ts';
import { type StoredPages, withStoredPages } from './stored-results.ts';

export function compiledQueries(schema: GraphQLSchema): ApolloServerPlugin<GraphQLContext> {
  // Key: the document's hash and operation name; null: graphql-jit cannot compile it (graphql-js runs it).
  const compiled = documentCache<CompiledQuery | null>(DOCUMENTS_KEPT);
  const compile = (key: string, document: DocumentNode, operationName: string | undefined): CompiledQuery | null =>
    compiled(key, () => {
      try {
        const result = compileQuery(schema, document, operationName);
        return isCompiledQuery(result) ? result : null;
      } catch {
        return null; // graphql-jit refuses what it cannot compile; graphql-js runs it.
      }
    });
  return {
    async requestDidStart() {
      return {
        async responseForOperation({
          operation,
          document,
          queryHash,
          request,
          contextValue,
        }): Promise<GraphQLResponse | null> {
          if (operation?.operation !== 'query') return null;
          const query = compile(
            `${queryHash}:${request.operationName ?? ''}`,
            document,
            request.operationName ?? undefined,
          );
          if (query === null) return null;
          const pages: StoredPages = new Map();
          contextValue.storedPages = pages;
          let result;
          try {
            result = await query.query(undefined, contextValue, request.variables ?? {});
          } catch {
            return null; // whatever went wrong, graphql-js answers (with its own errors)
          } finally {
            delete contextValue.storedPages;
          }
          const refusal = result.errors?.length ? refusalAmong(result.errors) : undefined;
          if (refusal) {
            return {
              http: { status: refusal.status, headers: new HeaderMap() },
              body: { kind: 'single', singleResult: refusalResult(refusal) },
            };
          }
          if (result.errors?.length || result.data == null) return null;
          return {
            http: { status: undefined, headers: new HeaderMap() },
            body: { kind: 'single', singleResult: withStoredPages({ data: result.data }, pages) },
          };
        },
      };
    },
  };
}
