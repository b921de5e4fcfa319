// Reads on a streaming replica (CONTRACT.md 9), against a real primary and replica built for the
// test: /v1 reads come from the replica (a paused replay shows a stale read) while the change feed
// stays on the primary, a replica lagging beyond READ_MAX_LAG_MS is skipped, and a stopped one never
// fails a read.
import { expect } from 'chai';
import pg from 'pg';
import { connectDatabase, type Database } from '../../src/database.ts';
import type { ReadPool } from '../../src/db/read-replicas.ts';
import type { Api } from '../../src/service.ts';
import { createTestKey, getJson, silentLogger, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { type Replicated, replicationUnavailable, startReplicated } from '../support/replication.ts';
import { eventually } from '../support/webhooks.ts';
import { feed, head } from '../feed/feed-support.ts';

describe('read replicas', function () {
  this.timeout(120_000);
  let cluster: Replicated | null = null;
  let replica: pg.Client;
  const opened: { db: Database; api: Api }[] = [];

  before(async function () {
    const missing = replicationUnavailable();
    if (missing) {
      console.log(`      skipped: no PostgreSQL binaries for a primary and replica: ${missing}`);
      return this.skip();
    }
    cluster = await startReplicated();
    replica = new pg.Client({ connectionString: cluster.replicaUrl });
    replica.on('error', () => {}); // the last test stops the replica under this connection
    await replica.connect();
  });
  after(async () => {
    for (const { db, api } of opened) {
      await api.close();
      await db.close();
    }
    await replica?.end().catch(() => {});
    await cluster?.stop();
  });

  /** An API whose reads go to the replica while it lags at most `maxLagMs`; with a key the replica has replayed. */
  async function open(maxLagMs: number) {
    const db = await connectDatabase(cluster!.primaryUrl, { poolMax: 4, connectTimeoutMs: 2000, migrate: true, logger: silentLogger, readReplicas: { urls: [cluster!.replicaUrl], maxLagMs, checkMs: 100 } });
    const api = await startTestApi({ db });
    opened.push({ db, api });
    const key = await createTestKey(['catalog:read'], db);
    const reads = db.readPool as ReadPool;
    await eventually(async () => reads.status()[0]!.healthy && (await getJson(api, '/v1/learning-opportunities?limit=1', key)).status === 200, 20_000, 'replica healthy with the key');
    return { db, api, key, reads };
  }

  it('serves /v1 from the replica: with replay paused, a record just published on the primary is not there yet', async () => {
    const { api, key, reads } = await open(600_000);
    await replica.query('select pg_wal_replay_pause()');
    try {
      const start = await head(api, key);
      const record = await createRecord(api.writes);
      const path = `/v1/learning-opportunities/${record.id}`;
      expect((await getJson(api, path, key)).status, 'stale read from the paused replica').to.equal(404);
      expect(reads.status()[0]!.healthy).to.equal(true);
      // The feed stays on the primary (README, Scaling): its event is there at once.
      const page = await feed(api, key, { after: start, wait: 10 });
      expect(page.results.map((e) => e.resource.id), 'the feed, read on the primary').to.deep.equal([record.id]);
    } finally {
      await replica.query('select pg_wal_replay_resume()');
    }
  });

  it('falls back to the primary while the replica lags beyond READ_MAX_LAG_MS', async () => {
    const { api, key, reads } = await open(300);
    await replica.query('select pg_wal_replay_pause()');
    try {
      const record = await createRecord(api.writes);
      await eventually(async () => !reads.status()[0]!.healthy, 10_000, 'the replica judged lagging');
      expect((await getJson(api, `/v1/learning-opportunities/${record.id}`, key)).status, 'read from the primary').to.equal(200);
    } finally {
      await replica.query('select pg_wal_replay_resume()');
    }
    await eventually(async () => reads.status()[0]!.healthy, 10_000, 'the replica healthy again once caught up');
  });

  it('never fails a read when the replica is stopped: the primary answers at once', async () => {
    const { api, key, reads } = await open(600_000);
    const record = await createRecord(api.writes);
    const path = `/v1/learning-opportunities/${record.id}`;
    await eventually(async () => (await getJson(api, path, key)).status === 200, 10_000, 'the record replayed');
    await cluster!.stopReplica();
    for (let i = 0; i < 5; i++) expect((await getJson(api, path, key)).status).to.equal(200);
    expect((await getJson(api, '/v1/learning-opportunities?limit=1', key)).status).to.equal(200);
    await eventually(async () => !reads.status()[0]!.healthy, 10_000, 'the stopped replica judged unhealthy');
  });
});
