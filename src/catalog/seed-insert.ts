// seed's set-based write: one statement inserts a batch of rendered records and their nested items.
// The columns are read back out of each rendered doc by PostgreSQL (the doc carries every field, in
// the schema's names), so the batch travels once, as its docs, and the columns cannot disagree with
// the bytes served. One insert into learning_opportunity per batch: the statement-level triggers
// (catalog_count, list_bucket) run once per batch and see exactly the rows inserted (ON CONFLICT DO
// NOTHING leaves present records, and their nested rows, as they are).
//
// Each batch is one statement in its own (implicit) transaction, sent on a session prepared by
// prepareSeedSession: no BEGIN and COMMIT round trips, and the commit follows the statement at once,
// so the catalog_count and list_bucket rows its triggers update are held for no longer than that.
import type { PoolClient } from 'pg';

type Column = [name: string, kind: 'text' | 'timestamptz' | 'integer' | 'float8' | 'jsonb', field: string];

// A JSON null in a jsonb column would be the jsonb value null; the ORM stores SQL NULL.
const read = ([, kind, field]: Column) => (kind === 'text' ? `e->>'${field}'` : kind === 'jsonb' ? `nullif(e->'${field}', 'null')` : `(e->>'${field}')::${kind}`);

/** Nested items keep their supplied id and their position in the record's array (from 0). */
function nestedInsert(table: string, arrayField: string, columns: Column[]): string {
  return `${table}_rows as (
    insert into ${table} (item_id, learning_opportunity_id, position, ${columns.map(([name]) => name).join(', ')})
    select (e->>'id')::uuid, f.id, x.o - 1, ${columns.map(read).join(', ')}
      from fresh f cross join lateral jsonb_array_elements(f.r->'${arrayField}') with ordinality as x(e, o))`;
}


const INSERT_BATCH = `
  with input as (select doc, doc::jsonb as r from string_to_table($1::text, E'\\n') as doc),
  inserted as (
    insert into learning_opportunity (id, title, summary, description, url, provider_name, provider_url, format, language, topics,
                                      price_amount, price_currency, status, published_at, created_at, updated_at, doc)
    select (r->>'id')::uuid, r->>'title', r->>'summary', r->>'description', r->>'url', r->'provider'->>'name', r->'provider'->>'url',
           r->>'format', r->>'language', r->'topics', (r->'price'->>'amount')::numeric, r->'price'->>'currency', r->>'status',
           (r->>'publishedAt')::timestamptz, (r->>'createdAt')::timestamptz, (r->>'updatedAt')::timestamptz, doc
      from input
    on conflict (id) do nothing
    returning id),
  fresh as (select i.r, n.id from input i join inserted n on n.id = (i.r->>'id')::uuid),
  ${nestedInsert('lo_session', 'sessions', [
    ['starts_at', 'timestamptz', 'startsAt'],
    ['ends_at', 'timestamptz', 'endsAt'],
    ['timezone', 'text', 'timezone'],
    ['format', 'text', 'format'],
    ['location', 'jsonb', 'location'],
    ['capacity', 'integer', 'capacity'],
  ])},
  ${nestedInsert('lo_deadline', 'deadlines', [
    ['type', 'text', 'type'],
    ['due_at', 'timestamptz', 'dueAt'],
    ['description', 'text', 'description'],
  ])},
  ${nestedInsert('lo_faq', 'faqs', [
    ['question', 'text', 'question'],
    ['answer', 'text', 'answer'],
  ])},
  ${nestedInsert('lo_external_review', 'externalReviews', [
    ['source', 'text', 'source'],
    ['url', 'text', 'url'],
    ['rating', 'float8', 'rating'],
    ['max_rating', 'float8', 'maxRating'],
    ['review_count', 'integer', 'reviewCount'],
    ['excerpt', 'text', 'excerpt'],
    ['reviewed_at', 'timestamptz', 'reviewedAt'],
  ])},
  ${nestedInsert('lo_accolade', 'accolades', [
    ['title', 'text', 'title'],
    ['issuer', 'text', 'issuer'],
    ['awarded_at', 'timestamptz', 'awardedAt'],
    ['url', 'text', 'url'],
  ])}
  select count(*)::int as n from inserted`;

/**
 * Settings for a session that runs only seed batches (the session ends with the seed: its connection
 * is closed, not returned to the pool with them):
 * - JIT compiling the statement costs more than running it (its row estimates are far too high);
 * - the batch (docs and their parsed jsonb, about 8 MB per 1000 records) stays in memory instead of
 *   going through temporary files;
 * - a commit does not wait for its WAL to reach the disk. A crash can lose the batches of the last
 *   moment (never part of one: each is atomic); seed is idempotent, so running it again with the
 *   same --seed inserts exactly what is missing.
 */
export async function prepareSeedSession(client: PoolClient): Promise<void> {
  await client.query(`set jit = off; set work_mem = '64MB'; set synchronous_commit = off`);
}

/** Inserts the records (rendered docs) not yet present, with their nested items, in one transaction; returns how many it inserted. */
export async function insertRenderedRecords(client: PoolClient, docs: readonly string[]): Promise<number> {
  // The docs travel as lines: JSON.stringify never writes a raw line break (it escapes them inside
  // strings), so no doc is split, and neither side pays for quoting them into a JSON array.
  if (docs.some((doc) => doc.includes('\n'))) throw new Error('a rendered record holds a raw line break: the renderer no longer writes compact JSON');
  const { rows } = await client.query<{ n: number }>(INSERT_BATCH, [docs.join('\n')]);
  return rows[0]!.n;
}
