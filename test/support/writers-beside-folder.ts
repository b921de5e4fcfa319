// Writers, a folder and a checker at once, for the tests of what the service's folders keep (the
// maintained counts, the search bitmaps, the facet pairs): 4 writers write each record of `ids` (one
// writer per record), each write a transaction held open a moment, as a real one is while it records
// its event; the folder (`fold`) runs far more often than the service's second; the checker runs
// its one-statement check (one snapshot) over and over. Every `pauseEvery` records a writer waits
// until the folder and the checker have each gone round once more, so that folds and checks fall
// between the writes however slow the machine is. A failed check stops everything at once.
import pg from 'pg';
import { testDb } from '../hooks.ts';

/** One write of a record: `sql` with the record's id as $1, in its own transaction. */
export type Write = (sql: string, id: string) => Promise<void>;

export async function writeBesideFolder(options: {
  ids: string[];
  /** The writes of the `i`th record. */
  writeRecord: (write: Write, id: string, i: number) => Promise<void>;
  /** One fold; true when it folded something. */
  fold: () => Promise<boolean>;
  check: () => Promise<void>;
  pauseEvery: number;
}): Promise<{ folds: number; checks: number }> {
  const { ids, writeRecord, fold, check, pauseEvery } = options;
  const writers = Array.from({ length: 4 }, () => new pg.Client({ connectionString: testDb().url }));
  await Promise.all(writers.map((c) => c.connect()));
  let running = true;
  let folds = 0;
  let checks = 0;
  const folding = (async () => {
    while (running) {
      if (await fold()) folds++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  const checking = (async () => {
    try {
      while (running) {
        await check();
        checks++;
      }
    } finally {
      running = false;
    }
  })();
  const bothWentRound = async () => {
    const [f, c] = [folds, checks];
    while (running && (folds === f || checks === c)) await new Promise((r) => setTimeout(r, 5));
  };
  try {
    await Promise.all(
      writers.map(async (client, w) => {
        const write: Write = async (sql, id) => {
          await client.query('begin');
          await client.query(sql, [id]);
          await client.query('select pg_sleep(0.001)');
          await client.query('commit');
        };
        for (let i = w; i < ids.length && running; i += writers.length) {
          await writeRecord(write, ids[i]!, i);
          if (i % pauseEvery < writers.length) await bothWentRound();
        }
      }),
    );
  } finally {
    running = false;
    await Promise.all(writers.map((c) => c.end()));
    await Promise.all([folding, checking]);
  }
  return { folds, checks };
}
