// Bearer authentication shared by REST and GraphQL: one parse, one lookup, one set of errors.
import type { Pool } from 'pg';
import { AppError } from '../errors.ts';
import { authenticate, type Principal, type Scope } from './api-keys.ts';

const challenge = (extra = '') => ({ 'WWW-Authenticate': `Bearer realm="learning-opportunities"${extra}` });

/** Resolves the Authorization header to a principal, or throws UNAUTHENTICATED. */
export async function principalFromHeader(pool: Pool, header: string | undefined): Promise<Principal> {
  if (!header) throw new AppError('UNAUTHENTICATED', 'An API key is required: send "Authorization: Bearer <API_KEY>"', { headers: challenge() });
  const match = /^Bearer ([^\s]+)$/i.exec(header.trim());
  if (!match?.[1]) {
    throw new AppError('UNAUTHENTICATED', 'The Authorization header must have the form "Bearer <API_KEY>"', {
      headers: challenge(', error="invalid_request"'),
    });
  }
  const principal = await authenticate(pool, match[1]);
  if (!principal) throw new AppError('UNAUTHENTICATED', 'The API key is unknown or has been revoked', { headers: challenge(', error="invalid_token"') });
  return principal;
}

/** Throws FORBIDDEN unless the principal holds `scope`. */
export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.has(scope)) {
    throw new AppError('FORBIDDEN', `This API key lacks the "${scope}" scope`, { headers: challenge(`, error="insufficient_scope", scope="${scope}"`) });
  }
}
