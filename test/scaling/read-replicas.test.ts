// Reads on a streaming replica (docs/contract.md, "Read replicas"), against a real primary and replica built for the
// test: /v1 reads and the change feed come from the replica (a paused replay shows a stale read; a
// long poll and a cursor ahead of the replica are served by the primary), a replica lagging beyond READ_MAX_LAG_MS is skipped, and a stopped one never
// fails a read.
import { expect } from 'chai';
import pg from 'pg';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import type { ReadPool } from '../../src/db/read-replicas.ts';
import type { Api } from '../../src/app/service.ts';
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
    const db = await connectDatabase(cluster!.primaryUrl, {
      poolMax: 4,
      connectTimeoutMs: 2000,
      migrate: true,
      logger: silentLogger,
      readReplicas: { urls: [cluster!.replicaUrl], maxLagMs, checkMs: 100 },
    });
    const api = await startTestApi({ db });
    opened.push({ db, api });
    const key = await createTestKey(['catalog:read'], db);
    const reads = db.readPool as ReadPool;
    await eventually(
      async () =>
        reads.status()[0]!.healthy && (await getJson(api, '/v1/learning-opportunities?limit=1', key)).status === 200,
      20_000,
      'replica healthy with the key',
    );
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
      // The feed on the replica: its head and pages are stale (no event yet), never wrong.
      expect(await head(api, key), 'head from the paused replica').to.equal(start);
      expect((await feed(api, key, { after: start })).results, 'page from the paused replica').to.deep.equal([]);
      // A long poll reads the primary (woken by its NOTIFY): the event at once.
      const polled = await feed(api, key, { after: start, wait: 10 });
      expect(
        polled.results.map((e) => e.resource.id),
        'long poll on the primary',
      ).to.deep.equal([record.id]);
      // Its cursor is ahead of the paused replica: the primary serves it (an empty page, not a 400).
      const next = await feed(api, key, { after: polled.pagination.next });
      expect([next.results, next.pagination.next]).to.deep.equal([[], polled.pagination.next]);
    } finally {
      await replica.query('select pg_wal_replay_resume()');
    }
  });

  it('serves the feed from the replica once replayed: head and page agree', async () => {
    const { api, key } = await open(600_000);
    const start = await head(api, key);
    const record = await createRecord(api.writes);
    await eventually(async () => (await head(api, key)) !== start, 10_000, 'the event replayed');
    const page = await feed(api, key, { after: start });
    expect(page.results.map((e) => e.resource.id)).to.deep.equal([record.id]);
    expect(page.pagination.next).to.equal(await head(api, key));
  });

  it('falls back to the primary while the replica lags beyond READ_MAX_LAG_MS', async () => {
    const { api, key, reads } = await open(300);
    await replica.query('select pg_wal_replay_pause()');
    try {
      const record = await createRecord(api.writes);
      await eventually(async () => !reads.status()[0]!.healthy, 10_000, 'the replica judged lagging');
      expect(
        (await getJson(api, `/v1/learning-opportunities/${record.id}`, key)).status,
        'read from the primary',
      ).to.equal(200);
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
