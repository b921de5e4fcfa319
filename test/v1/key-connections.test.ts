// One key's many reads at once take at most DB_MAX_CONNECTIONS_PER_KEY of the main pool
// (db/key-connections.ts): its other reads wait in line, then get 429, while another key's reads
// find connections at once. Seen from outside before: 25 parallel pages of one key took every
// connection, and that key's and another key's reads got 503 "database unreachable".
// The reads are held in the database by a lock on the catalog, so each admitted one provably holds
// its connection for as long as the test says.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { testDb } from '../hooks.ts';
import { getJson, graphql, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';

describe('connections of the main pool per key', function () {
  this.timeout(30_000);
  // The suite's pool has 10 connections: 12 reads of one key would take them all.
  const served = useTestApi(
    { hog: ['catalog:read', 'graphql:read'], other: ['catalog:read'] },
    { maxConnectionsPerKey: 2, query: { queueWaitMs: 500 } },
  );

  it("one key's reads beyond its share wait, then get 429; another key's reads are answered meanwhile", async () => {
    const { api } = served;
    const id = (await createRecord(api.writes)).id;
    // Both keys known to the key cache: its look-up is not what this measures.
    for (const key of [served.hog, served.other])
      expect((await getJson(api, `/v1/learning-opportunities/${id}`, key)).status).to.equal(200);

    const locker = new pg.Client({ connectionString: testDb().url });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table learning_opportunity in access exclusive mode');
      const hog = Array.from({ length: 12 }, () => getJson(api, `/v1/learning-opportunities/${id}`, served.hog));
      await sleep(800); // the ten beyond the share have waited out the line (500 ms)
      const started = performance.now();
      const other = await getJson(api, '/v1/events/head', served.other);
      const otherMs = performance.now() - started;
      await locker.query('commit');
      const answers = await Promise.all(hog);

      expect(other.status, other.text).to.equal(200);
      expect(otherMs, 'another key found a connection at once').to.be.below(1000);
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).to.deep.equal([...Array(2).fill(200), ...Array(10).fill(429)]);
      const refused = answers.find((a) => a.status === 429)!;
      const problem = expectProblem(refused, 429);
      expect(problem.detail).to.include('DB_MAX_CONNECTIONS_PER_KEY');
      expect(refused.headers.get('retry-after')).to.equal('1');
    } finally {
      await locker.end();
    }
    // Nothing is left held: the key reads again at once.
    expect((await getJson(api, `/v1/learning-opportunities/${id}`, served.hog)).status).to.equal(200);
  });

  it("counts the key's GraphQL reads the same way (429 RATE_LIMITED beyond its share)", async () => {
    const { api } = served;
    const id = (await createRecord(api.writes)).id;
    const query = `{ learningOpportunity(id: "${id}") { id } }`;
    expect((await graphql(api, served.hog, query)).status).to.equal(200);
    const locker = new pg.Client({ connectionString: testDb().url });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table learning_opportunity in access exclusive mode');
      const sent = Array.from({ length: 6 }, () => graphql(api, served.hog, query));
      await sleep(800);
      await locker.query('commit');
      const answers = await Promise.all(sent);
      expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 200, 429, 429, 429, 429]);
      const refused = answers.find((a) => a.status === 429)!;
      expect(refused.body.errors?.[0]?.extensions?.code).to.equal('RATE_LIMITED');
    } finally {
      await locker.end();
    }
  });
});
