// Bearer authentication shared by REST and GraphQL: one parse, one lookup, one set of errors.
import type { Pool } from 'pg';
import { AppError } from '../errors.ts';
import { authenticate, type Principal, type Scope } from './api-keys.ts';

const challenge = (extra = '') => ({ 'WWW-Authenticate': `Bearer realm="learning-opportunities"${extra}` });

/** The token of a well-formed `Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  return (header && /^Bearer ([^\s]+)$/i.exec(header.trim())?.[1]) || null;
}

/** The key presented in the Authorization header, checked for form only (no database), or throws UNAUTHENTICATED. */
export function presentedKey(header: string | undefined): string {
  if (!header) throw new AppError('UNAUTHENTICATED', 'An API key is required: send "Authorization: Bearer <API_KEY>"', { headers: challenge() });
  const token = bearerToken(header);
  if (!token) {
    throw new AppError('UNAUTHENTICATED', 'The Authorization header must have the form "Bearer <API_KEY>"', {
      headers: challenge(', error="invalid_request"'),
    });
  }
  return token;
}

/** The principal of a key look-up, or throws UNAUTHENTICATED for an unknown or revoked key (null). */
export function knownKey(principal: Principal | null): Principal {
  if (!principal) throw new AppError('UNAUTHENTICATED', 'The API key is unknown or has been revoked', { headers: challenge(', error="invalid_token"') });
  return principal;
}

/** Resolves the Authorization header to a principal, or throws UNAUTHENTICATED. */
export async function principalFromHeader(pool: Pool, header: string | undefined): Promise<Principal> {
  return knownKey(await authenticate(pool, presentedKey(header)));
}

/** Throws FORBIDDEN unless the principal holds `scope`. */
export function requireScope(principal: Principal, scope: Scope): void {
  requireAnyScope(principal, [scope]);
}

/** Throws FORBIDDEN unless the principal holds at least one of `scopes`. */
export function requireAnyScope(principal: Principal, scopes: readonly Scope[]): void {
  if (scopes.some((scope) => principal.scopes.has(scope))) return;
  const detail = scopes.length === 1 ? `the "${scopes[0]}" scope` : `one of the scopes ${scopes.map((s) => `"${s}"`).join(', ')}`;
  throw new AppError('FORBIDDEN', `This API key lacks ${detail}`, { headers: challenge(`, error="insufficient_scope", scope="${scopes.join(' ')}"`) });
}
