// One answer for a request the service could not serve for want of capacity, wherever GraphQL meets
// it, with the HTTP status and Retry-After of REST's answer to the same refusal and a single error:
// - SERVICE_UNAVAILABLE: an unreachable or frozen database (503, Retry-After 5, exactly as the gate
//   answers when the key look-up itself fails, http-gate.ts), or a read cancelled at its deadline
//   (503, Retry-After 1, its own message: the database was fine). Without this, a caller whose key
//   was cached got 200 with the error among partial data, and one whose key was not got 503.
// - RATE_LIMITED: a search, filter or facet read not admitted in time (kernel/query-gate.ts: 429 with
//   the Retry-After REST sends); it was answered 200 with the error and no hint when to retry.
// The refused field is non-null, so `data` is null either way: nothing of the answer is lost.
import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLFormattedError } from 'graphql';
import { AppError, toAppError } from '../kernel/errors.ts';
import { graphQLErrorBody } from './http-gate.ts';

const REFUSALS = new Set(['SERVICE_UNAVAILABLE', 'RATE_LIMITED']);

/** The refusal among `items` (by their codes), an outage first: it is what the caller must wait for. */
function firstRefusal<T>(items: readonly T[], codeOf: (item: T) => unknown): T | undefined {
  return items.find((i) => codeOf(i) === 'SERVICE_UNAVAILABLE') ?? items.find((i) => REFUSALS.has(codeOf(i) as string));
}

/** The refusal among errors thrown while executing (an AppError, or a database outage), if any. */
export function refusalAmong(errors: readonly { originalError?: unknown }[]): AppError | undefined {
  return firstRefusal(
    errors.map((e) => toAppError(e.originalError ?? e)),
    (e) => e.code,
  );
}

/** The one error a refusal is answered with (willSendResponse below sets its status and Retry-After). */
export function refusalResult(error: AppError): { errors: [GraphQLFormattedError] } {
  const retryAfter = Number(error.headers['Retry-After']);
  return {
    errors: [{ message: error.message, extensions: { code: error.code, ...(retryAfter > 0 ? { retryAfter } : {}) } }],
  };
}

/** The AppError a formatted refusal stands for (its message and Retry-After as formatGraphQLError kept them). */
function refusalOf(error: GraphQLFormattedError): AppError {
  const code = error.extensions!.code as 'SERVICE_UNAVAILABLE' | 'RATE_LIMITED';
  const given = error.extensions?.retryAfter;
  const retryAfter = typeof given === 'number' ? given : code === 'SERVICE_UNAVAILABLE' ? 5 : 1;
  return new AppError(code, error.message, { headers: { 'Retry-After': String(retryAfter) } });
}

export function refusalsAsHttpStatus(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          const errors = response.body.singleResult.errors ?? [];
          const refused = firstRefusal(errors, (e) => e.extensions?.code);
          if (!refused) return;
          const error = refusalOf(refused);
          response.http.status = error.status;
          for (const [name, value] of Object.entries(error.headers))
            response.http.headers.set(name.toLowerCase(), value);
          response.body.singleResult = graphQLErrorBody(error);
        },
      };
    },
  };
}
