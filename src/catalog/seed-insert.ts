// seed's set-based write: one statement inserts a batch of rendered records and their nested items.
// The columns are read back out of each rendered doc by PostgreSQL (the doc carries every field, in
// the schema's names), so the batch travels once, as its docs, and the columns cannot disagree with
// the bytes served. One insert into learning_opportunity per batch: the statement-level triggers
// (catalog_count, list_bucket) run once per batch and see exactly the rows inserted (ON CONFLICT DO
// NOTHING leaves present records, and their nested rows, as they are).
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
  with input as (select doc, doc::jsonb as r from jsonb_array_elements_text($1::jsonb) as doc),
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

/** Inserts the records (rendered docs) not yet present, with their nested items; returns how many it inserted. */
export async function insertRenderedRecords(client: PoolClient, docs: readonly string[]): Promise<number> {
  // JIT compiling this statement costs more than running it (its row estimates are far too high).
  await client.query('set local jit = off');
  // The docs as one JSON array of strings: much cheaper to send and unpack than a text[] of JSON.
  const { rows } = await client.query<{ n: number }>(INSERT_BATCH, [JSON.stringify(docs)]);
  return rows[0]!.n;
}
