// API keys: 256 random bits, shown once, stored as a SHA-256 hash and looked up by that hash (so no
// comparison ever runs over the secret itself), scoped, revocable with immediate effect.
import { hash, randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { QueryResultRow } from 'pg';
import type { Queryable } from '../db/read-replicas.ts';
import { badInput, notFound } from '../errors.ts';
import { ApiKey } from './entities.ts';

export const SCOPES = ['catalog:read', 'graphql:read', 'catalog:write', 'receivers:manage'] as const;
export type Scope = (typeof SCOPES)[number];
/** Every scope that grants some GraphQL operation: /graphql lets in a key holding any of them. */
export const GRAPHQL_SCOPES: readonly Scope[] = ['graphql:read', 'catalog:write', 'receivers:manage'];

const KEY_PREFIX = 'lods_';
const KEY_RE = /^lods_[A-Za-z0-9_-]{43}$/;

export type ApiKeyInfo = { id: string; name: string; prefix: string; scopes: Scope[]; rateLimit: number | null; createdAt: string; revokedAt: string | null };
/** rateLimit: the key's own requests per minute, or null for the service default. */
export type Principal = { keyId: string; scopes: ReadonlySet<string>; rateLimit: number | null };

// crypto.hash: the one-shot form, several times cheaper per call than createHash (it runs on every request).
export const hashKey = (key: string): string => hash('sha256', key, 'hex');
export const looksLikeKey = (key: string): boolean => KEY_RE.test(key);

function present(k: { id: string; name: string; prefix: string; scopes: string[]; rateLimit?: number | null; createdAt: Date; revokedAt?: Date | null }): ApiKeyInfo {
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
  if (values.length === 0) throw badInput([{ name: 'scope', reason: `at least one scope is required (${SCOPES.join(', ')})` }]);
  if (unknown.length) throw badInput([{ name: 'scope', reason: `unknown scope ${unknown.join(', ')}; known: ${SCOPES.join(', ')}` }]);
  return [...new Set(values)] as Scope[];
}

export async function createApiKey(em: EntityManager, input: { name: string; scopes: Scope[]; rateLimit?: number | null; key?: string }): Promise<ApiKeyInfo & { key: string }> {
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

export type Statement = { name: string; text: string; values: unknown[] };

/**
 * What a key check found: null when no live key has the hash; otherwise the key's principal and,
 * for a keyed read, the read's row: undefined when the read did not run because the key lacks the
 * scope, and all its columns null when it found nothing (the read is left-joined to the key).
 */
export type KeyCheck<R> = { principal: Principal; row: R | undefined } | null;

// The scopes travel as one space-separated text (scope names hold no spaces): a split is several
// times cheaper than parsing a text[] literal, and every /v1 request pays it.
type KeyColumns = { key_id: string; key_scopes: string; key_rate_limit: number | null };
const principalOf = (row: KeyColumns): Principal => ({ keyId: row.key_id, scopes: new Set(row.key_scopes.split(' ')), rateLimit: row.key_rate_limit });

/** The live key with this hash, on its own (for callers with no read to attach it to). */
export async function lookUpKey(pool: Queryable, keyHash: string): Promise<KeyCheck<never>> {
  const { rows } = await pool.query<KeyColumns>({
    name: 'api-key-auth',
    text: "select id as key_id, array_to_string(scopes, ' ') as key_scopes, rate_limit as key_rate_limit from api_key where key_hash = $1 and revoked_at is null",
    values: [keyHash],
  });
  return rows[0] ? { principal: principalOf(rows[0]), row: undefined } : null;
}

const keyedTexts = new Map<string, string>();

/**
 * The read statement, unchanged, behind the key look-up: the key hash and the scope are appended as
 * the two parameters after the read's own, and the read runs only for a live key holding the scope.
 * (`offset 0` keeps the planner from flattening the subquery, so the scope test stays a one-time
 * filter in front of the read; flattened, it became a join filter applied after the read ran.)
 */
function keyedText(read: Statement): string {
  const keyHash = `$${read.values.length + 1}`;
  const scope = `$${read.values.length + 2}`;
  return `with caller as (select id, scopes, rate_limit from api_key where key_hash = ${keyHash} and revoked_at is null)
          select caller.id as key_id, array_to_string(caller.scopes, ' ') as key_scopes, caller.rate_limit as key_rate_limit, r.*
            from caller
            left join lateral (select * from (${read.text}) q where ${scope} = any(caller.scopes) offset 0) r on true`;
}

/**
 * Runs `read` and checks the key in one statement: one round trip instead of two, and the same
 * snapshot, so a key revoked before the request began fails on that request, exactly as with a
 * separate look-up, and nothing is cached.
 */
export async function readWithKey<R extends QueryResultRow>(pool: Queryable, keyHash: string, scope: Scope, read: Statement): Promise<KeyCheck<R>> {
  let text = keyedTexts.get(read.name);
  if (text === undefined) keyedTexts.set(read.name, (text = keyedText(read)));
  const { rows } = await pool.query<KeyColumns & R>({ name: `keyed-${read.name}`, text, values: [...read.values, keyHash, scope] });
  const row = rows[0];
  if (!row) return null;
  const principal = principalOf(row);
  return { principal, row: principal.scopes.has(scope) ? row : undefined };
}
