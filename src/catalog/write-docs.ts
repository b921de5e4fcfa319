// The catalog's one write path into its tables: every write (the mutations, bulk or single, and seed)
// sends rendered docs, and PostgreSQL reads the columns and the nested rows out of each doc (the doc
// carries every field, in the schema's names). So a batch travels once, as its docs, and the columns
// cannot disagree with the bytes served. One statement per batch, however many records and nested
// rows it holds: the statement-level triggers (catalog_count, list_bucket) run once per batch.
//
// Set-based rather than MikroORM's unit of work: flushing 500 records with their ~6,000 nested
// entities cost milliseconds of Node CPU per record (bench/README.md, "The bulk mutations").

import type { RunSql } from '../db/transaction-sql.ts';

type Column = [
  name: string,
  kind: 'text' | 'timestamptz' | 'integer' | 'float8' | 'numeric' | 'uuid' | 'jsonb',
  field: string,
];

// Where each column comes from in the doc (a dotted path for nested objects). A new field of the
// record gets its column here (docs/development.md, "Adding a field to the record").
const LEARNING_OPPORTUNITY_COLUMNS: Column[] = [
  ['id', 'uuid', 'id'],
  ['title', 'text', 'title'],
  ['summary', 'text', 'summary'],
  ['description', 'text', 'description'],
  ['url', 'text', 'url'],
  ['provider_name', 'text', 'provider.name'],
  ['provider_url', 'text', 'provider.url'],
  ['format', 'text', 'format'],
  ['language', 'text', 'language'],
  ['topics', 'jsonb', 'topics'],
  ['price_amount', 'numeric', 'price.amount'],
  ['price_currency', 'text', 'price.currency'],
  ['status', 'text', 'status'],
  ['published_at', 'timestamptz', 'publishedAt'],
  ['created_at', 'timestamptz', 'createdAt'],
  ['updated_at', 'timestamptz', 'updatedAt'],
];

const NESTED_TABLES: { table: string; field: string; columns: Column[] }[] = [
  {
    table: 'lo_session',
    field: 'sessions',
    columns: [
      ['starts_at', 'timestamptz', 'startsAt'],
      ['ends_at', 'timestamptz', 'endsAt'],
      ['timezone', 'text', 'timezone'],
      ['format', 'text', 'format'],
      ['location', 'jsonb', 'location'],
      ['capacity', 'integer', 'capacity'],
    ],
  },
  {
    table: 'lo_deadline',
    field: 'deadlines',
    columns: [
      ['type', 'text', 'type'],
      ['due_at', 'timestamptz', 'dueAt'],
      ['description', 'text', 'description'],
    ],
  },
  {
    table: 'lo_faq',
    field: 'faqs',
    columns: [
      ['question', 'text', 'question'],
      ['answer', 'text', 'answer'],
    ],
  },
  {
    table: 'lo_external_review',
    field: 'externalReviews',
    columns: [
      ['source', 'text', 'source'],
      ['url', 'text', 'url'],
      ['rating', 'float8', 'rating'],
      ['max_rating', 'float8', 'maxRating'],
      ['review_count', 'integer', 'reviewCount'],
      ['excerpt', 'text', 'excerpt'],
      ['reviewed_at', 'timestamptz', 'reviewedAt'],
    ],
  },
  {
    table: 'lo_accolade',
    field: 'accolades',
    columns: [
      ['title', 'text', 'title'],
      ['issuer', 'text', 'issuer'],
      ['awarded_at', 'timestamptz', 'awardedAt'],
      ['url', 'text', 'url'],
    ],
  },
];

/**
 * What the statement does with present records: `skip` keeps them as they are (seed); `replace`
 * rewrites them and their nested rows (a new content); `lifecycle` rewrites only the lifecycle
 * columns and the doc (publish, archive: the content and so the nested rows stay what they were).
 */
export type OnConflict = 'skip' | 'replace' | 'lifecycle';

// A JSON null in a jsonb column would be the jsonb value null; the ORM wrote SQL NULL, and so do we.
function read(json: string, [, kind, field]: Column): string {
  const value = field
    .split('.')
    .reduce((path, key, i, keys) => `${path}${i === keys.length - 1 && kind !== 'jsonb' ? '->>' : '->'}'${key}'`, json);
  return kind === 'text' ? value : kind === 'jsonb' ? `nullif(${value}, 'null')` : `(${value})::${kind}`;
}

/** Nested items keep their supplied id and their position in the record's array (from 0). */
const nestedInsert = ({ table, field, columns }: (typeof NESTED_TABLES)[number]) => `,
  ${table}_rows as (
    insert into ${table} (item_id, learning_opportunity_id, position, ${columns.map(([name]) => name).join(', ')})
    select (e->>'id')::uuid, w.id, x.o - 1, ${columns.map((c) => read('e', c)).join(', ')}
      from written w cross join lateral jsonb_array_elements(w.r->'${field}') with ordinality as x(e, o))`;

// The columns a write sets on a present record: all of them for a new content, the lifecycle and
// the doc for publish and archive.
const UPDATED_COLUMNS = {
  replace: LEARNING_OPPORTUNITY_COLUMNS.filter(([name]) => name !== 'id'),
  lifecycle: LEARNING_OPPORTUNITY_COLUMNS.filter(([name]) => ['status', 'published_at', 'updated_at'].includes(name)),
};
const COLUMN_NAMES = LEARNING_OPPORTUNITY_COLUMNS.map(([name]) => name).join(', ');

// The docs travel as lines (docsParameter), split by unnest(string_to_array(...)): planned with
// the parameter's value, that array is a constant whose length the planner counts, where
// string_to_table is estimated at 1,000 rows whatever the text. Costed as 1,000 records with their
// nested rows, a one-record write crossed jit_above_cost on servers with JIT (PostgreSQL 15 here) and
// spent 30 of its 40 ms compiling (bench/README.md, "JIT on single writes"). Materialized: each doc
// is parsed once, not once per column read out of it (inlined, the lifecycle write parsed every doc
// 16 times: half its CPU).
//
// Present records are updated, absent ones inserted, in one statement (the statement-level triggers
// run once per batch). Not `insert ... on conflict do update`: its insert computes the proposed row,
// the search vector included, before it finds the conflict, and the update computes it again; a
// publish of 500 records took 4x the CPU of this update, triggers aside (bench/README.md, "Present
// records updated, not upserted"). The insert keeps the upsert's `on conflict do update` for a
// record another transaction committed after this statement's snapshot; a mutation's id locks leave
// only the seed (no locks) able to do that, and then, as before, the nested rows that the caller
// did not delete (its load did not see the record) fail the write on their unique keys rather than
// doubling. `written` holds the records
// inserted or replaced, whose nested rows are (re)inserted; their old ones are already gone
// (deleteNestedRows, an earlier statement: within one statement the order of a CTE's delete and
// another's insert is not defined, and both touch the same unique keys).
function writeDocsSql(onConflict: OnConflict): string {
  const input = `input as materialized (select doc, doc::jsonb as r from unnest(string_to_array($1::text, E'\\n')) as doc)`;
  const insert = (from: string, conflict: string) => `
    insert into learning_opportunity (${COLUMN_NAMES}, doc)
    select ${LEARNING_OPPORTUNITY_COLUMNS.map((c) => read('i.r', c)).join(', ')}, i.doc
      from ${from}
    on conflict (id) ${conflict}
    returning id`;
  const update = (columns: Column[]) => `
    update learning_opportunity lo
       set ${[...columns.map((c) => `${c[0]} = ${read('i.r', c)}`), 'doc = i.doc'].join(', ')}
      from input i
     where lo.id = (i.r->>'id')::uuid
    returning lo.id`;
  const setAll = (columns: Column[]) =>
    `do update set ${[...columns.map(([name]) => name), 'doc'].map((n) => `${n} = excluded.${n}`).join(', ')}`;
  const written = `,
  written as (select i.r, u.id from input i join upserted u on u.id = (i.r->>'id')::uuid)${NESTED_TABLES.map(nestedInsert).join('')}`;
  switch (onConflict) {
    case 'skip':
      return `
  with ${input},
  upserted as (${insert('input i', 'do nothing')})${written}
  select count(*)::int as n from upserted`;
    case 'lifecycle':
      return `
  with ${input},
  upserted as (${update(UPDATED_COLUMNS.lifecycle)})
  select count(*)::int as n from upserted`;
    case 'replace':
      return `
  with ${input},
  updated as (${update(UPDATED_COLUMNS.replace)}),
  inserted as (${insert(`input i where (i.r->>'id')::uuid not in (select id from updated)`, setAll(UPDATED_COLUMNS.replace))}),
  upserted as (select id from updated union all select id from inserted)${written}
  select count(*)::int as n from upserted`;
  }
}

const WRITE_DOCS: Record<OnConflict, string> = {
  skip: writeDocsSql('skip'),
  replace: writeDocsSql('replace'),
  lifecycle: writeDocsSql('lifecycle'),
};

const DELETE_NESTED_ROWS = `with ${NESTED_TABLES.map(({ table }) => `${table}_gone as (delete from ${table} where learning_opportunity_id = any($1::uuid[]))`).join(', ')} select 1`;

/**
 * The docs as one text parameter, a doc per line: JSON.stringify never writes a raw line break (it
 * escapes them inside strings), so no doc is split, and neither side pays for quoting them into a
 * JSON array.
 */
function docsParameter(docs: readonly string[]): string {
  if (docs.some((doc) => doc.includes('\n')))
    throw new Error('a rendered record holds a raw line break: the renderer no longer writes compact JSON');
  return docs.join('\n');
}

/** Writes records (rendered docs) and, unless only their lifecycle changed, their nested items; returns how many it inserted or updated. */
export async function writeDocs(run: RunSql, docs: readonly string[], onConflict: OnConflict): Promise<number> {
  if (docs.length === 0) return 0;
  const rows = await run<{ n: number }>(WRITE_DOCS[onConflict], [docsParameter(docs)]);
  return rows[0]!.n;
}

/** Deletes every nested row of these records, before their content is replaced: one statement. */
export async function deleteNestedRows(run: RunSql, ids: readonly string[]): Promise<void> {
  if (ids.length) await run(DELETE_NESTED_ROWS, [ids]);
}
