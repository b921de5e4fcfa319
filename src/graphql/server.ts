// Apollo Server on the express app: SDL from schema/, resolvers merged by @graphql-tools/schema,
// the caller authenticated beforehand (http-gate.ts), cost limits, stable error codes from formatError,
// one answer (503 or 429, with Retry-After) for a request refused for capacity (refusal-status.ts),
// and queries run by a compiled executor (compiled-execution.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Server, ServerResponse } from 'node:http';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { expressMiddleware } from '@as-integrations/express5';
import { makeExecutableSchema } from '@graphql-tools/schema';
import type { IResolvers } from '@graphql-tools/utils';
import type { RequestHandler } from 'express';
import type { GraphQLSchema } from 'graphql';
import type { Principal } from '../auth/api-keys.ts';
import type { Logger } from '../kernel/logger.ts';
import { compiledQueries } from './compiled-execution.ts';
import { formatGraphQLError } from './errors.ts';
import { oneMutationPerRequest } from './one-mutation.ts';
import { type QueryLimits, queryLimits } from './query-limits.ts';
import { responseSizeLimit } from './response-size.ts';
import { schemaDetailsForGraphqlReadOnly } from './schema-visibility.ts';
import { refusalsAsHttpStatus } from './refusal-status.ts';
import { variableProblems } from './variable-problems.ts';
import type { GraphQLContext } from './resolvers.ts';

export const SCHEMA_DIR = resolve(import.meta.dirname, '../../schema');

export function loadTypeDefs(): string[] {
  return readdirSync(SCHEMA_DIR)
    .filter((f) => f.endsWith('.graphql'))
    .sort((a, b) => (a === 'base.graphql' ? -1 : b === 'base.graphql' ? 1 : a.localeCompare(b)))
    .map((f) => readFileSync(resolve(SCHEMA_DIR, f), 'utf8'));
}

export function buildSchema(resolvers: IResolvers[]): GraphQLSchema {
  return makeExecutableSchema({ typeDefs: loadTypeDefs(), resolvers });
}

export async function createGraphQLMiddleware(deps: {
  schema: GraphQLSchema;
  /** Called once per request, for that request only. */
  newContext: (principal: Principal, res: ServerResponse) => GraphQLContext;
  limits: QueryLimits;
  logger: Logger;
  /** The server whose requests in flight a stop lets finish, for up to graceMs, before closing their connections. */
  drain?: { httpServer: Server; graceMs: number };
}): Promise<{ middleware: RequestHandler; stop: () => Promise<void> }> {
  const responseSize = responseSizeLimit(deps.limits.maxResponseBytes);
  const apollo = new ApolloServer<GraphQLContext>({
    schema: deps.schema,
    formatError: formatGraphQLError(deps.logger),
    includeStacktraceInErrorResponses: false,
    // Automatic persisted queries would let any caller fill a server-side cache, and no client of
    // this internal API sends them: a persistedQuery extension gets PERSISTED_QUERY_NOT_SUPPORTED.
    persistedQueries: false,
    // Who may introspect is decided by scope (schema-visibility.ts), the same in every environment;
    // Apollo's default would switch it off for everyone under NODE_ENV=production and on elsewhere.
    introspection: true,
    stringifyResult: responseSize.stringifyResult,
    // main.ts owns SIGTERM/SIGINT and shuts down in order; Apollo's own handler would re-raise the
    // signal and kill the process halfway through (before the worker and pg-boss have stopped).
    stopOnTerminationSignals: false,
    plugins: [
      schemaDetailsForGraphqlReadOnly(deps.schema),
      queryLimits(deps.schema, deps.limits),
      oneMutationPerRequest(),
      refusalsAsHttpStatus(),
      variableProblems(),
      ...(deps.drain
        ? [
            ApolloServerPluginDrainHttpServer({
              httpServer: deps.drain.httpServer,
              stopGracePeriodMillis: deps.drain.graceMs,
            }),
          ]
        : []),
      compiledQueries(deps.schema),
      responseSize.plugin, // last: it serializes the result the others have left
    ],
  });
  await apollo.start();
  const middleware = expressMiddleware(apollo, {
    // graphqlGate (http-gate.ts) authenticated the caller and checked a GraphQL scope before this runs.
    context: async ({ req, res }) => deps.newContext(req.principal!, res),
  });
  return { middleware, stop: () => apollo.stop() };
}
