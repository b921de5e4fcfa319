// Queries run by graphql-jit's compiled executor (each distinct document compiled once, then plain
// JavaScript per request): a 100-record page with every field costs a third of graphql-js's
// field-by-field execution (bench/README.md, "GraphQL page"). Apollo's own checks have run before
// (parse, validation, the gate, cost/depth/alias limits, schema visibility); this only answers the
// operation instead of graphql-js, through Apollo's responseForOperation hook. An answer with any
// error is thrown away and the operation runs again in graphql-js, so every error keeps the shape,
// path and code it has always had (the queries are reads: running one twice changes nothing).
// Mutations and subscriptions always run in graphql-js. A page that asks for every stored field is
// answered with the stored bytes (stored-results.ts).
import { HeaderMap, type ApolloServerPlugin, type GraphQLResponse } from '@apollo/server';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { GraphQLContext } from './resolvers.ts';
import { type StoredPages, withStoredPages } from './stored-results.ts';

/** Distinct documents kept compiled (the oldest dropped first); internal clients send a handful. */
const COMPILED_MAX = 200;

export function compiledQueries(schema: GraphQLSchema): ApolloServerPlugin<GraphQLContext> {
  // Key: the document's hash and operation name; null: graphql-jit cannot compile it (graphql-js runs it).
  const compiled = new Map<string, CompiledQuery | null>();
  const compile = (key: string, document: DocumentNode, operationName: string | undefined): CompiledQuery | null => {
    let query = compiled.get(key);
    if (query === undefined) {
      query = null;
      try {
        const result = compileQuery(schema, document, operationName);
        if (isCompiledQuery(result)) query = result;
      } catch {
        // graphql-jit refuses what it cannot compile; graphql-js runs it.
      }
      if (compiled.size >= COMPILED_MAX) compiled.delete(compiled.keys().next().value!);
      compiled.set(key, query);
    }
    return query;
  };
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
