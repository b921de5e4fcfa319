// One answer for an unreachable or frozen database, wherever GraphQL meets it: HTTP 503 with
// Retry-After and a single SERVICE_UNAVAILABLE error, exactly as the gate answers when the key
// look-up itself fails (http-gate.ts). Without this, a caller whose key was cached got 200 with the
// error among partial data, and one whose key was not got 503, for the same outage.
import type { ApolloServerPlugin } from '@apollo/server';
import { databaseUnavailable } from '../kernel/errors.ts';
import { graphQLErrorBody } from './http-gate.ts';

export function unavailableAs503(): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          if (!response.body.singleResult.errors?.some((e) => e.extensions?.code === 'SERVICE_UNAVAILABLE')) return;
          const error = databaseUnavailable(null);
          response.http.status = error.status;
          for (const [name, value] of Object.entries(error.headers))
            response.http.headers.set(name.toLowerCase(), value);
          response.body.singleResult = graphQLErrorBody(error);
        },
      };
    },
  };
}
