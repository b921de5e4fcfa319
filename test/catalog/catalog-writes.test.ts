// The catalog's writes below GraphQL: updatedAt moves forward even when the clock does not, and
// concurrent writers of one id are serialised (no lost or failed first insert, no torn record).
import { expect } from 'chai';
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { testDb } from '../hooks.ts';
import { waitingForLock } from '../support/database.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';

type Doc = {
  id: string;
  title: string;
  status: string;
  updatedAt: string;
  publishedAt: string | null;
  sessions: unknown[];
};
const parse = (doc: string) => JSON.parse(doc) as Doc;

describe('catalog writes', () => {
  it('moves updatedAt strictly forward on every change even within one millisecond (frozen clock)', async () => {
    const frozen = new Date('2031-05-05T05:05:05.005Z');
    const writes = createCatalogWrites({
      orm: testDb().orm,
      recordChange: createChangeRecorder(null),
      clock: () => frozen,
    });
    const input = buildLearningOpportunityInput();
    const created = parse(await writes.upsert(parseLearningOpportunityInput(input)));
    expect(created.updatedAt).to.equal('2031-05-05T05:05:05.005Z');
    const published = parse(await writes.publish(input.id));
    expect(published.updatedAt).to.equal('2031-05-05T05:05:05.006Z');
    expect(published.publishedAt).to.equal(published.updatedAt);
    const edited = parse(await writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Edited' })));
    expect(edited.updatedAt).to.equal('2031-05-05T05:05:05.007Z');
    const archived = parse(await writes.archive(input.id));
    expect(archived.updatedAt).to.equal('2031-05-05T05:05:05.008Z');
    // nothing changes: nothing moves
    expect(parse(await writes.archive(input.id)).updatedAt).to.equal(archived.updatedAt);
    expect(parse(await writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Edited' }))).updatedAt).to.equal(
      archived.updatedAt,
    );
    await writes.delete(input.id); // dated 2031: it would lead every later internal list
  });

  // A writer per call, as separate processes: one process's writers of an id queue in memory first
  // (id-gate.ts); these race at the database's lock.
  const separateWriter = () => createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });

  it('serialises concurrent first upserts of one id: all succeed, one record, last content wins whole', async () => {
    const base = buildLearningOpportunityInput();
    const versions = [1, 2, 3, 4, 5].map((n) =>
      parseLearningOpportunityInput({
        ...base,
        title: `Version ${n}`,
        sessions: (base.sessions as unknown[]).slice(0, n % 2 ? 1 : 2),
      }),
    );
    const results = await Promise.allSettled(versions.map((v) => separateWriter().upsert(v)));
    expect(
      results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason)),
    ).to.deep.equal([]);
    const { rows } = await testDb().pool.query<{ doc: string }>('select doc from learning_opportunity where id = $1', [
      base.id,
    ]);
    expect(rows).to.have.length(1);
    const stored = parse(rows[0]!.doc);
    const winner = versions.find((v) => v.title === stored.title)!;
    expect(stored.sessions).to.have.length(winner.sessions.length);
    const sessions = await testDb().pool.query<{ n: number }>(
      'select count(*)::int as n from lo_session where learning_opportunity_id = $1',
      [base.id],
    );
    expect(sessions.rows[0]!.n, 'nested rows match the stored record').to.equal(winner.sessions.length);
  });

  it('serialises a publish racing an edit: the final record is published and carries the edit', async () => {
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    const input = buildLearningOpportunityInput();
    await writes.upsert(parseLearningOpportunityInput(input));
    await Promise.all([
      separateWriter().publish(input.id),
      separateWriter().upsert(parseLearningOpportunityInput({ ...input, title: 'Raced edit' })),
      separateWriter().publish(input.id),
    ]);
    const { rows } = await testDb().pool.query<{ doc: string; status: string; title: string }>(
      'select doc, status, title from learning_opportunity where id = $1',
      [input.id],
    );
    const stored = parse(rows[0]!.doc);
    expect(stored).to.include({ status: 'PUBLISHED', title: 'Raced edit' });
    expect(rows[0]).to.include({ status: 'PUBLISHED', title: 'Raced edit' });
  });

  // A lifecycle move re-renders the record from its stored doc; a doc that no longer fits the
  // schema (a field added since it was rendered, before `catalog rerender`) is read from its rows.
  it('publishes a record whose stored doc lacks a field of the schema: the published doc is whole', async () => {
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    const input = buildLearningOpportunityInput();
    const whole = JSON.parse(await writes.upsert(parseLearningOpportunityInput(input))) as Record<string, unknown>;
    expect(whole.accolades).to.have.length.above(0);
    await testDb().pool.query(`update learning_opportunity set doc = (doc::jsonb - 'accolades')::text where id = $1`, [
      input.id,
    ]);
    const published = JSON.parse(await writes.publish(input.id)) as Record<string, unknown>;
    expect(published).to.deep.equal({
      ...whole,
      status: 'PUBLISHED',
      publishedAt: published.updatedAt,
      updatedAt: published.updatedAt,
    });
    expect(Object.keys(published)).to.deep.equal(Object.keys(whole));
    await writes.delete(input.id);
  });

  // A writer can meet another transaction on the same rows in the other order (an operator's
  // disable, the delivery worker): PostgreSQL ends one as a deadlock's victim. The write runs again.
  it("runs a write again, whole, when it is a deadlock's victim: the content platform gets its answer", async () => {
    // The write's first run stops before it records its change (holding the record's lock), until
    // the other side waits for that lock.
    const record = createChangeRecorder(null);
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    let go!: () => void;
    const otherWaits = new Promise<void>((resolve) => (go = resolve));
    let [armed, paused] = [false, false];
    const writes = createCatalogWrites({
      orm: testDb().orm,
      recordChange: async (em, changes) => {
        if (armed && !paused) {
          paused = true;
          holding();
          await otherWaits;
        }
        return record(em, changes);
      },
    });
    const input = buildLearningOpportunityInput();
    await writes.upsert(parseLearningOpportunityInput(input));
    await writes.publish(input.id);
    const events = async () =>
      (
        await testDb().pool.query<{ n: number }>('select count(*)::int as n from event where resource_id = $1', [
          input.id,
        ])
      ).rows[0]!.n;
    const before = await events();
    const other = await testDb().pool.connect();
    try {
      // The other side holds the record's version row, and checks for deadlocks only after 30 s; it
      // waits for the record's lock, which the write holds; then the write asks for the version row
      // and closes the cycle: its check, 1 s later, finds it, and the write is the victim.
      await other.query('begin');
      await other.query(`set local deadlock_timeout = '30s'`);
      await other.query('update resource_version set version = version where resource_id = $1', [input.id]);
      armed = true;
      const edited = writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Edited through a deadlock' }));
      await held;
      const otherLock = other.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [input.id]);
      await waitingForLock(testDb().pool, 'pg_advisory_xact_lock(hashtextextended($1, 0))');
      go();
      await otherLock; // granted once the write's first run is rolled back
      await other.query('commit');
      expect(parse(await edited).title).to.equal('Edited through a deadlock');
    } finally {
      await other.query('rollback').catch(() => {});
      other.release();
    }
    expect(await events(), 'one event for the edit').to.equal(before + 1);
    await writes.delete(input.id);
  });
});
