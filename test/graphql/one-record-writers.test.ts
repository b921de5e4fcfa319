// Many writers of one record at once must not starve the pool that /v1 reads share: writers of one
// id queue in the process (catalog/id-gate.ts) instead of each holding a connection while the
// database's lock makes it wait. Before, 20 parallel upserts of one record took every connection and
// a read sent meanwhile waited past DB_CONNECT_TIMEOUT_MS: 503.
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, graphql, startTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { mutate, UPSERT } from '../support/graphql-documents.ts';

describe('many writers of one record beside /v1 reads', function () {
  this.timeout(60_000);
  let db: Database;
  let api: Api;
  let writer: string;
  let reader: string;
  before(async () => {
    // A small pool with a short wait for a connection, so that a starved pool shows as 503s at once.
    db = await connectDatabase(testDb().url, { poolMax: 3, connectTimeoutMs: 250, migrate: false });
    api = await startTestApi({ db });
    writer = await createTestKey(['catalog:write', 'graphql:read']);
    reader = await createTestKey(['catalog:read']);
  });
  after(async () => {
    await api?.close();
    await db?.close();
  });

  it('48 parallel upserts of one record all apply in turn, and reads of another record meanwhile all answer 200', async () => {
    const hot = buildLearningOpportunityInput();
    const other = buildLearningOpportunityInput();
    await mutate(api, writer, 'upsert', hot);
    await mutate(api, writer, 'publish', hot.id); // published: each edit is an UPDATED event
    await mutate(api, writer, 'upsert', other);
    await mutate(api, writer, 'publish', other.id);

    // Every connection open beforehand: opening one on a loaded machine can take a good part of the 250 ms.
    await Promise.all([1, 2, 3].map(() => db.pool.query('select pg_sleep(0.05)')));
    let writing = true;
    const readStatuses: number[] = [];
    const reads = (async () => {
      while (writing) {
        const res = await getJson(api, `/v1/learning-opportunities/${other.id}`, reader);
        readStatuses.push(res.status);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const upserts = await Promise.all(
      Array.from({ length: 48 }, (_, n) => graphql(api, writer, UPSERT, { input: { ...hot, title: `Writer ${n}` } })),
    );
    writing = false;
    await reads;

    expect(
      upserts.filter((r) => r.status !== 200 || r.body.errors).map((r) => JSON.stringify(r.body)),
      'every upsert applied',
    ).to.deep.equal([]);
    expect(readStatuses.length, 'reads were sent while the writers ran').to.be.greaterThan(0);
    expect(readStatuses.filter((s) => s !== 200)).to.deep.equal([]);
    // Each upsert changed the record: one event each, versions strictly increasing.
    const { rows } = await testDb().pool.query<{ version: string }>(
      `select version from event where resource_id = $1 and type = 'LEARNING_OPPORTUNITY_UPDATED' order by version`,
      [hot.id],
    );
    expect(rows).to.have.length(48);
    expect(new Set(rows.map((r) => r.version)).size).to.equal(48);
  });
});
