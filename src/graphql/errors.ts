// AppError -> GraphQL error with a stable extensions.code; anything unknown becomes a generic
// INTERNAL_SERVER_ERROR (logged, never shown). Anything of a key's form in a message or a parameter's
// name is redacted, as in REST's problems (an enum value, a field or an operation name quoted back).
import type { GraphQLFormattedError } from 'graphql';
import { unwrapResolverError } from '@apollo/server/errors';
import { redactKeys } from '../auth/api-keys.ts';
import { AppError, ClientGone, ERROR_CODES, toAppError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import { withoutVariableValue } from './variable-values.ts';

// Codes produced by GraphQL/Apollo themselves for malformed requests; their messages are safe.
const REQUEST_ERROR_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);

/** The message of PERSISTED_QUERY_NOT_SUPPORTED (Apollo's is "PersistedQueryNotSupported"). */
export const PERSISTED_QUERIES_REFUSED = 'Persisted queries are not kept here: send the whole document in `query`';

export function formatGraphQLError(logger: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    const code = formatted.extensions?.code;
    // Request errors of GraphQL itself, and ours raised before resolvers run (authentication).
    // Apollo labels every unknown resolver error INTERNAL_SERVER_ERROR: its message is internal.
    if (
      !(original instanceof AppError) &&
      typeof code === 'string' &&
      code !== 'INTERNAL_SERVER_ERROR' &&
      (REQUEST_ERROR_CODES.has(code) || code in ERROR_CODES)
    ) {
      return {
        message:
          code === 'PERSISTED_QUERY_NOT_SUPPORTED'
            ? PERSISTED_QUERIES_REFUSED
            : redactKeys(withoutVariableValue(formatted.message, original)),
        locations: formatted.locations,
        path: formatted.path,
        extensions: { code },
      };
    }
    const appError = toAppError(original);
    // A read abandoned by its client (ClientGone) answers no one: not worth an error line.
    if (appError.code === 'INTERNAL_SERVER_ERROR' && !(original instanceof ClientGone))
      logger.error({ err: original }, 'unhandled GraphQL error');
    const extensions: Record<string, unknown> = { code: appError.code };
    if (appError.invalidParams)
      extensions.invalidParams = appError.invalidParams.map((p) => ({
        ...p,
        name: redactKeys(p.name),
        reason: redactKeys(p.reason),
      }));
    // Seconds to wait before asking again, as REST's Retry-After (refusal-status.ts sends it as the header).
    const retryAfter = Number(appError.headers['Retry-After']);
    if (retryAfter > 0) extensions.retryAfter = retryAfter;
    return { message: redactKeys(appError.message), locations: formatted.locations, path: formatted.path, extensions };
  };
}
