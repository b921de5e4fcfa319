// API keys: 256 random bits, shown once, stored as a SHA-256 hash and looked up by that hash (so no
// comparison ever runs over the secret itself), scoped, revocable with immediate effect.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { badInput, notFound } from '../errors.ts';
import { ApiKey } from './entities.ts';

export const SCOPES = ['catalog:read', 'graphql:read', 'catalog:write'] as const;
export type Scope = (typeof SCOPES)[number];

const KEY_PREFIX = 'lods_';
const KEY_RE = /^lods_[A-Za-z0-9_-]{43}$/;

export type ApiKeyInfo = { id: string; name: string; prefix: string; scopes: Scope[]; createdAt: string; revokedAt: string | null };
export type Principal = { keyId: string; scopes: ReadonlySet<string> };

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');
export const looksLikeKey = (key: string): boolean => KEY_RE.test(key);

function present(k: { id: string; name: string; prefix: string; scopes: string[]; createdAt: Date; revokedAt?: Date | null }): ApiKeyInfo {
  return { id: k.id, name: k.name, prefix: k.prefix, scopes: k.scopes as Scope[], createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null };
}

export function parseScopes(values: readonly string[]): Scope[] {
  const unknown = values.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (values.length === 0) throw badInput([{ name: 'scope', reason: `at least one scope is required (${SCOPES.join(', ')})` }]);
  if (unknown.length) throw badInput([{ name: 'scope', reason: `unknown scope ${unknown.join(', ')}; known: ${SCOPES.join(', ')}` }]);
  return [...new Set(values)] as Scope[];
}

export async function createApiKey(em: EntityManager, input: { name: string; scopes: Scope[]; key?: string }): Promise<ApiKeyInfo & { key: string }> {
  if (!input.name.trim()) throw badInput([{ name: 'name', reason: 'must not be blank' }]);
  const key = input.key ?? KEY_PREFIX + randomBytes(32).toString('base64url');
  const entity = em.create(ApiKey, {
    id: randomUUID(),
    name: input.name,
    prefix: key.slice(0, KEY_PREFIX.length + 6),
    keyHash: hashKey(key),
    scopes: input.scopes,
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

/** Looks a presented key up by its hash; null for unknown or revoked keys. */
export async function authenticate(pool: Pool, key: string): Promise<Principal | null> {
  if (!looksLikeKey(key)) return null;
  const { rows } = await pool.query<{ id: string; scopes: string[] }>({
    name: 'api-key-auth',
    text: 'select id, scopes from api_key where key_hash = $1 and revoked_at is null',
    values: [hashKey(key)],
  });
  const row = rows[0];
  return row ? { keyId: row.id, scopes: new Set(row.scopes) } : null;
}
