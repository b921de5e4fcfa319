// Authentication, one step for every endpoint (the /v1 reads and GraphQL): parse the Bearer
// header, find the live key by its hash, require a scope; one set of errors. One path alone, the
// calendar (GET /v1/calendar.ics: calendar apps send no headers), also takes its key as `?key=`
// (authenticateQueryKey); every other path reads the Authorization header only, and a `key`
// parameter there is an unknown parameter like any other.
import { AppError } from '../kernel/errors.ts';
import { hashKey, looksLikeKey, type Principal, type Scope } from './api-keys.ts';
import type { KeyCache } from './key-cache.ts';

const challenge = (extra = '') => ({ 'WWW-Authenticate': `Bearer realm="learning-opportunities"${extra}` });

/** The token of a well-formed `Bearer <token>` header (one or more spaces after the scheme, RFC 9110 11.4), or null. */
function bearerToken(header: string): string | null {
  return /^Bearer +([^\s]+)$/i.exec(header.trim())?.[1] ?? null;
}

/**
 * The key presented in the Authorization header, checked for form only (no database), or throws
 * UNAUTHENTICATED. `headers` are all the request's Authorization headers (`headersDistinct`): Node
 * keeps only the first of several, while a proxy in front may use the last, so two are refused.
 */
function presentedKey(headers: readonly string[] | undefined, inUrl: Scope | null): string {
  const header = headers?.[0];
  if (!header)
    throw new AppError(
      'UNAUTHENTICATED',
      `An API key is required: send "Authorization: Bearer <API_KEY>"${inUrl ? `, or a ${inUrl} key as ?${QUERY_KEY_PARAMETER}=<API_KEY>` : ''}`,
      { headers: challenge() },
    );
  if (headers.length > 1) {
    throw new AppError('UNAUTHENTICATED', 'Send exactly one Authorization header', {
      headers: challenge(', error="invalid_request"'),
    });
  }
  const token = bearerToken(header);
  if (!token) {
    throw new AppError('UNAUTHENTICATED', 'The Authorization header must have the form "Bearer <API_KEY>"', {
      headers: challenge(', error="invalid_request"'),
    });
  }
  return token;
}

/** Throws FORBIDDEN unless the principal holds `scope`. */
export function requireScope(principal: Principal, scope: Scope): void {
  requireAnyScope(principal, [scope]);
}

/** Throws FORBIDDEN unless the principal holds at least one of `scopes`. */
export function requireAnyScope(principal: Principal, scopes: readonly Scope[]): void {
  if (scopes.some((scope) => principal.scopes.has(scope))) return;
  const detail =
    scopes.length === 1 ? `the "${scopes[0]}" scope` : `one of the scopes ${scopes.map((s) => `"${s}"`).join(', ')}`;
  throw new AppError('FORBIDDEN', `This API key lacks ${detail}`, {
    headers: challenge(`, error="insufficient_scope", scope="${scopes.join(' ')}"`),
  });
}

/**
 * The authentication of every request (the /v1 reads, the feed, GraphQL): the live key with the
 * presented key's hash, from the process's key cache. Throws UNAUTHENTICATED for a missing,
 * malformed, unknown or revoked key, FORBIDDEN when the key lacks `scope` (several: it must hold
 * one of them; null: any live key will do; GraphQL checks its scopes per field). `inUrl`: the scope
 * of a key the path also takes as `?key=` (the calendar), named when no key was sent.
 */
export async function authenticate(
  headers: readonly string[] | undefined,
  scope: Scope | readonly Scope[] | null,
  keys: KeyCache,
  inUrl: Scope | null = null,
): Promise<Principal> {
  const principal = await liveKey(presentedKey(headers, inUrl), keys);
  if (scope) requireAnyScope(principal, typeof scope === 'string' ? [scope] : scope);
  return principal;
}

/** The name of the query parameter that may carry the key, on the one path that takes it there. */
export const QUERY_KEY_PARAMETER = 'key';

/**
 * The authentication of a key given in the request target (`?key=`; `values`: every value of that
 * parameter), for the one path that takes it (the calendar). Such a key must hold `scope` and no other
 * scope: a key that sits in a URL (a calendar app's settings, its sync logs) reads nothing else, and
 * a key that could do more is refused there (FORBIDDEN), though it works in the header. Exactly one
 * key per request (RFC 6750 2: one method only): a key in the URL beside an Authorization header,
 * or two `key` parameters, is UNAUTHENTICATED (invalid_request). No message quotes the key.
 */
export async function authenticateQueryKey(
  values: readonly string[],
  headers: readonly string[] | undefined,
  scope: Scope,
  keys: KeyCache,
): Promise<Principal> {
  const invalid = (message: string) =>
    new AppError('UNAUTHENTICATED', message, { headers: challenge(', error="invalid_request"') });
  if (headers?.length)
    throw invalid(`Send the API key once: in the Authorization header or as ?${QUERY_KEY_PARAMETER}=, not both`);
  if (values.length !== 1) throw invalid(`Send exactly one ${QUERY_KEY_PARAMETER} parameter`);
  const principal = await liveKey(values[0]!, keys);
  requireScope(principal, scope);
  if (principal.scopes.size > 1) {
    throw new AppError(
      'FORBIDDEN',
      `A key in the URL (?${QUERY_KEY_PARAMETER}=) must hold the "${scope}" scope alone: this key can do more, and a URL is kept in calendar apps' settings and logs. Send this key in the Authorization header, or give the calendar app a key created with --scope ${scope} only`,
      { headers: challenge(`, error="insufficient_scope", scope="${scope}"`) },
    );
  }
  return principal;
}

/** The live key `key` (as presented), or throws UNAUTHENTICATED (malformed, unknown or revoked). */
async function liveKey(key: string, keys: KeyCache): Promise<Principal> {
  const principal = looksLikeKey(key) ? await keys.principal(hashKey(key)) : null;
  if (!principal)
    throw new AppError('UNAUTHENTICATED', 'The API key is unknown or has been revoked', {
      headers: challenge(', error="invalid_token"'),
    });
  return principal;
}
