// API keys: 256 random bits, shown once, stored as a SHA-256 hash and looked up by that hash (so no
// comparison ever runs over the secret itself), scoped, revocable with immediate effect.
import { hash, randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { badInput, notFound } from '../errors.ts';
import { ApiKey } from './entities.ts';

export const SCOPES = ['catalog:read', 'graphql:read', 'catalog:write', 'receivers:manage'] as const;
export type Scope = (typeof SCOPES)[number];
/** Every scope that grants some GraphQL operation: /graphql lets in a key holding any of them. */
export const GRAPHQL_SCOPES: readonly Scope[] = ['graphql:read', 'catalog:write', 'receivers:manage'];

const KEY_PREFIX = 'lods_';
const KEY_RE = /^lods_[A-Za-z0-9_-]{43}$/;

export type ApiKeyInfo = { id: string; name: string; prefix: string; scopes: Scope[]; createdAt: string; revokedAt: string | null };
export type Principal = { keyId: string; scopes: ReadonlySet<string> };

// crypto.hash: the one-shot form, several times cheaper per call than createHash (it runs on every request).
export const hashKey = (key: string): string => hash('sha256', key, 'hex');
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

export type Statement = { name: string; text: string; values: unknown[] };
export type KeyedResult<R> = { principal: Principal; row: R | undefined };

const keyedTexts = new Map<string, string>();

/**
 * Wraps a read statement so that the key look-up runs inside it: $1 is the key hash, $2 the scope
 * the read needs, and the read's own parameters follow. The read runs only for a live key holding
 * the scope: `offset 0` keeps the planner from flattening the subquery, so the scope test stays a
 * one-time filter in front of it (flattened, it became a join filter applied after the read ran).
 * The read's parameters are renumbered textually: it must not contain `$n` anywhere else.
 */
function keyedText(read: string): string {
  const shifted = read.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + 2}`);
  return `select k.id as key_id, k.scopes as key_scopes, r.*
            from api_key k
            left join lateral (select * from (${shifted}) q where $2 = any(k.scopes) offset 0) r on true
           where k.key_hash = $1 and k.revoked_at is null`;
}

/**
 * Runs `read` and authenticates `key` in one statement: one round trip instead of two, and the
 * same snapshot, so a key revoked before the request began fails on that request, exactly as with a
 * separate look-up, and nothing is cached. Null for an unknown or revoked key; `row` is undefined
 * when the read found nothing or did not run because the key lacks `scope`.
 */
export async function queryWithKey<R>(pool: Pool, key: string, scope: Scope, read: Statement): Promise<KeyedResult<R> | null> {
  if (!looksLikeKey(key)) return null;
  let text = keyedTexts.get(read.name);
  if (text === undefined) keyedTexts.set(read.name, (text = keyedText(read.text)));
  const { rows } = await pool.query<{ key_id: string; key_scopes: string[] } & R>({ name: `keyed-${read.name}`, text, values: [hashKey(key), scope, ...read.values] });
  const row = rows[0];
  if (!row) return null;
  const principal = { keyId: row.key_id, scopes: new Set(row.key_scopes) };
  return { principal, row: principal.scopes.has(scope) ? row : undefined };
}
