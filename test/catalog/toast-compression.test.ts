// The records' docs and the event bodies are stored lz4-compressed where the server is built with lz4
// (migration write_costs: a sixth of pglz's CPU on every write), and with the server's default
// elsewhere (the embedded server has no lz4); either way a record and its event read back byte for byte.
import { expect } from 'chai';
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';

describe('stored docs and event bodies', () => {
  it('are lz4-compressed where the server has lz4, and read back as written', async () => {
    const pool = testDb().pool;
    const { rows: server } = await pool.query<{ lz4: boolean; fallback: string }>(
      `select 'lz4' = any(enumvals) as lz4, current_setting('default_toast_compression') as fallback
         from pg_settings where name = 'default_toast_compression'`,
    );
    const expected = server[0]!.lz4 ? 'lz4' : server[0]!.fallback;
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    // A description long enough (and repetitive enough) for PostgreSQL to compress the doc.
    const input = buildLearningOpportunityInput({ description: 'Hands-on practice with real data. '.repeat(200) });
    await writes.upsert(parseLearningOpportunityInput(input));
    const doc = await writes.publish(input.id); // a draft has no event; publishing it has one

    const { rows } = await pool.query<{ stored: string; compression: string | null }>(
      `select doc as stored, pg_column_compression(doc) as compression from learning_opportunity where id = $1`,
      [input.id],
    );
    expect(rows[0]!.compression).to.equal(expected);
    expect(rows[0]!.stored).to.equal(doc);
    const { rows: events } = await pool.query<{ body: string; compression: string | null }>(
      `select body, pg_column_compression(body) as compression from event where resource_id = $1`,
      [input.id],
    );
    expect(events).to.have.length(1);
    expect(events[0]!.compression).to.equal(expected);
    expect(JSON.parse(events[0]!.body).data).to.deep.equal(JSON.parse(doc));
  });
});
