// A migration that rewrites a table (ALTER TABLE ... ADD COLUMN with a volatile default, a type
// change) leaves it with an empty visibility map and no statistics: index-only scans then read the
// heap for every entry until autovacuum comes by, which a rewrite does not prompt. At a million
// records, a `format+language` count went from 33 ms to 255 ms after migration search_bitmaps
// rewrote list_entry. migrate() (orm.ts) therefore vacuums and analyzes the tables the migrations
// it applied rewrote, found by their storage file (relfilenode) having changed.
import type { ClientBase } from 'pg';

/** Each table of the current schema: its name (as SQL) and storage file. */
export type TableFiles = Map<string, string>;

export async function tableFiles(client: Pick<ClientBase, 'query'>): Promise<TableFiles> {
  const { rows } = await client.query<{ name: string; file: string }>(
    `select c.oid::regclass::text as name, c.relfilenode::text as file
       from pg_class c where c.relkind = 'r' and c.relnamespace = current_schema()::regnamespace`,
  );
  return new Map(rows.map((r) => [r.name, r.file]));
}

/** Vacuums and analyzes the tables present `before` whose storage file changed since; returns their names. */
export async function vacuumRewritten(client: Pick<ClientBase, 'query'>, before: TableFiles): Promise<string[]> {
  const after = await tableFiles(client);
  const rewritten = [...after].filter(([name, file]) => before.has(name) && before.get(name) !== file).map(([n]) => n);
  for (const name of rewritten) await client.query(`vacuum (analyze) ${name}`);
  return rewritten;
}
