// API keys: 256 random bits, shown once, stored as a SHA-256 hash and looked up by that hash (so no
// comparison ever runs over the secret itself), scoped, revocable (every API process refuses a
// revoked key within milliseconds: auth/key-cache.ts).
import { hash, randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Queryable } from '../db/read-replicas.ts';
import { badInput, notFound } from '../kernel/errors.ts';
import { ApiKey } from './entities.ts';

// calendar:read: GET /v1/calendar.ics alone, the one path that takes its key as `?key=` (calendar
// apps send no headers), so that a key that ends up in a calendar app's settings reads nothing else.
export const SCOPES = ['catalog:read', 'graphql:read', 'catalog:write', 'receivers:manage', 'calendar:read'] as const;
export type Scope = (typeof SCOPES)[number];
/** Every scope that grants some GraphQL operation: /graphql lets in a key holding any of them. */
export const GRAPHQL_SCOPES: readonly Scope[] = ['graphql:read', 'catalog:write', 'receivers:manage'];

const KEY_PREFIX = 'lods_';
const KEY_RE = /^lods_[A-Za-z0-9_-]{43}$/;

export type ApiKeyInfo = {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  rateLimit: number | null;
  createdAt: string;
  revokedAt: string | null;
};
/** rateLimit: the key's own requests per minute, or null for the service default. */
export type Principal = { keyId: string; scopes: ReadonlySet<string>; rateLimit: number | null };

// crypto.hash: the one-shot form, several times cheaper per call than createHash (it runs on every request).
export const hashKey = (key: string): string => hash('sha256', key, 'hex');
export const looksLikeKey = (key: string): boolean => KEY_RE.test(key);
/** Whether `text` holds something with a key's form (its prefix and 16 or more of its characters). */
export const holdsKey = (text: string): boolean => /lods_[A-Za-z0-9_-]{16}/.test(text);
/** `text` with everything of a key's form replaced (a key quoted back in a problem's detail or parameter names). */
export const redactKeys = (text: string): string =>
  text.includes('lods_') ? text.replace(/lods_[A-Za-z0-9_-]{16,}/g, '[redacted]') : text;

function present(k: {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  rateLimit?: number | null;
  createdAt: Date;
  revokedAt?: Date | null;
}): ApiKeyInfo {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes as Scope[],
    rateLimit: k.rateLimit ?? null,
    createdAt: k.createdAt.toISOString(),
    revokedAt: k.revokedAt?.toISOString() ?? null,
  };
}

export function parseScopes(values: readonly string[]): Scope[] {
  const unknown = values.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (values.length === 0)
    throw badInput([{ name: 'scope', reason: `at least one scope is required (${SCOPES.join(', ')})` }]);
  if (unknown.length)
    throw badInput([{ name: 'scope', reason: `unknown scope ${unknown.join(', ')}; known: ${SCOPES.join(', ')}` }]);
  return [...new Set(values)] as Scope[];
}

export async function createApiKey(
  em: EntityManager,
  input: { name: string; scopes: Scope[]; rateLimit?: number | null; key?: string },
): Promise<ApiKeyInfo & { key: string }> {
  if (!input.name.trim()) throw badInput([{ name: 'name', reason: 'must not be blank' }]);
  const rateLimit = input.rateLimit ?? null;
  if (rateLimit !== null && !(Number.isInteger(rateLimit) && rateLimit > 0 && rateLimit <= 2 ** 31 - 1)) {
    throw badInput([{ name: 'rate-limit', reason: 'must be a positive integer (requests per minute)' }]);
  }
  const key = input.key ?? KEY_PREFIX + randomBytes(32).toString('base64url');
  const entity = em.create(ApiKey, {
    id: randomUUID(),
    name: input.name,
    prefix: key.slice(0, KEY_PREFIX.length + 6),
    keyHash: hashKey(key),
    scopes: input.scopes,
    rateLimit,
    createdAt: new Date(),
    revokedAt: null,
  });
  await em.flush();
  return { ...present(entity), key };
}

export async function listApiKeys(em: EntityManager): Promise<ApiKeyInfo[]> {
  return (await em.find(ApiKey, {}, { orderBy: { createdAt: 'asc' } })).map(present);
}

export async function revokeApiKey(em: EntityManager, id: string): Promise<ApiKeyInfo> {
  const entity = await em.findOne(ApiKey, { id });
  if (!entity) throw notFound(`API key ${id}`);
  entity.revokedAt ??= new Date();
  await em.flush();
  return present(entity);
}

// The scopes travel as one space-separated text (scope names hold no spaces): a split is several
// times cheaper than parsing a text[] literal.
type KeyColumns = { key_id: string; key_scopes: string; key_rate_limit: number | null };

/** The live key with this hash, or null (unknown or revoked). auth/key-cache.ts keeps what it finds. */
export async function lookUpKey(pool: Queryable, keyHash: string): Promise<Principal | null> {
  const { rows } = await pool.query<KeyColumns>({
    name: 'api-key-auth',
    text: "select id as key_id, array_to_string(scopes, ' ') as key_scopes, rate_limit as key_rate_limit from api_key where key_hash = $1 and revoked_at is null",
    values: [keyHash],
  });
  const row = rows[0];
  return row ? { keyId: row.key_id, scopes: new Set(row.key_scopes.split(' ')), rateLimit: row.key_rate_limit } : null;
}
