// Incremental sync over the change feed: the library (sync) and `npm run cli -- sync` end to end
// against the real API. The copy ends equal to the public catalog, deletions and archivals included;
// an interrupted run resumes from its stored cursor; an expired cursor starts over with a walk.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createCatalogClient, sync, type SyncBatch, type SyncState } from '@lods/client';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, startTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput, createRecord, resetCatalog } from '../support/factories.ts';
import { collect, head } from '../feed/feed-support.ts';
import { runCli as cli } from './cli-process.ts';

/** The public catalog as the API serves it now: id -> record JSON. */
async function publicCatalog(api: Api, key: string): Promise<Map<string, unknown>> {
  const res = await fetch(`${api.url}/v1/learning-opportunities?limit=100`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const page = (await res.json()) as { results: { id: string }[]; pagination: { totalCount: number } };
  expect(page.pagination.totalCount, 'small enough for one page').to.be.at.most(100);
  return new Map(page.results.map((r) => [r.id, r]));
}

async function fileCopy(path: string): Promise<Map<string, unknown>> {
  const lines = (await readFile(path, 'utf8')).split('\n').filter(Boolean);
  return new Map(lines.map((l) => JSON.parse(l) as { id: string }).map((r) => [r.id, r]));
}

/** Changes of every kind: a new record, an update, an archival, a deletion; returns once they are readable in the feed. */
async function changeCatalog(api: Api, key: string, existing: { id: string }[]): Promise<void> {
  const start = await head(api, key);
  await createRecord(api.writes, { title: 'Arrived later' });
  await api.writes.upsert(
    parseLearningOpportunityInput(buildLearningOpportunityInput({ id: existing[0]!.id, title: 'Changed later' })),
  );
  await api.writes.archive(existing[1]!.id);
  await api.writes.delete(existing[2]!.id);
  await collect(api, key, start, 4);
}

describe('sync over the change feed', function () {
  this.timeout(120_000);
  let api: Api;
  let key: string;
  let dir: string;
  beforeEach(async () => {
    await resetCatalog();
    api = await startTestApi();
    key = await createTestKey(['catalog:read']);
    dir = await mkdtemp(join(tmpdir(), 'lods-sync-'));
  });
  afterEach(async () => {
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('cli: a full walk first, then only the changes; a record deleted or archived between two runs is gone from the file', async () => {
    const records = [];
    const start = await head(api, key);
    // U+2028 and U+2029 are valid in JSON text, and line readers (Node's readline, Python's
    // splitlines) end lines at them: the second run read its own copy as fragments and refused it.
    for (let i = 0; i < 4; i++)
      records.push(await createRecord(api.writes, { title: i === 0 ? 'Sync\u2028one\u2029two' : `Sync ${i}` }));
    await collect(api, key, start, 4); // readable, so the first run's head is past them
    const [out, state] = [join(dir, 'catalog.jsonl'), join(dir, 'state.json')];
    const args = ['sync', '--base-url', api.url, '--state', state, '--out', out, '--json'];

    const first = await cli(args, { LODS_API_KEY: key });
    expect(first.code, first.stderr).to.equal(0);
    expect(JSON.parse(first.stdout)).to.deep.include({ mode: 'full', restarted: false, walked: 4, records: 4 });
    expect(await fileCopy(out)).to.deep.equal(await publicCatalog(api, key));
    expect(await readFile(out, 'utf8'), 'escaped in the file').not.to.match(/[\u2028\u2029]/);

    await changeCatalog(api, key, records);
    const second = await cli(args, { LODS_API_KEY: key });
    expect(second.code, second.stderr).to.equal(0);
    expect(JSON.parse(second.stdout)).to.deep.include({
      mode: 'incremental',
      events: 4,
      upserts: 2,
      removals: 2,
      records: 3,
    });
    expect(second.stderr).to.match(/changes applied/); // progress
    const copy = await fileCopy(out);
    expect(copy).to.deep.equal(await publicCatalog(api, key));
    expect(copy.has(records[1]!.id), 'archived').to.equal(false);
    expect(copy.has(records[2]!.id), 'deleted').to.equal(false);

    // Nothing new: nothing to do, the copy stays.
    const third = await cli(args, { LODS_API_KEY: key });
    expect(JSON.parse(third.stdout)).to.deep.include({ mode: 'incremental', events: 0, records: 3 });

    // The stored cursor falls out of the retained window (a prune passed it): 410, so it starts over.
    const beforeDelete = await head(api, key);
    await api.writes.delete(records[3]!.id);
    await collect(api, key, beforeDelete, 1);
    await testDb().pool.query(
      `update event_feed_pruned set (xid, position) = (select xid, position from event order by xid desc, position desc limit 1)`,
    );
    const fourth = await cli(args, { LODS_API_KEY: key });
    expect(fourth.code, fourth.stderr).to.equal(0);
    expect(JSON.parse(fourth.stdout)).to.deep.include({ mode: 'full', restarted: true, walked: 2, records: 2 });
    expect(await fileCopy(out)).to.deep.equal(await publicCatalog(api, key));
  });

  it('library: a run interrupted between batches resumes from the last stored cursor and ends with the same copy', async () => {
    const records = [];
    const start = await head(api, key);
    for (let i = 0; i < 3; i++) records.push(await createRecord(api.writes));
    await collect(api, key, start, 3);
    const client = createCatalogClient({ baseUrl: api.url, apiKey: key, minRetryDelayMs: 5 });
    const copy = new Map<string, unknown>();
    let stored: SyncState | null = null;
    const store = (failAfter = Infinity) => {
      let batches = 0;
      return async (batch: SyncBatch) => {
        if (batches++ >= failAfter) throw new Error('crash');
        if (batch.reset) copy.clear();
        for (const c of batch.changes) {
          if (c.op === 'upsert') copy.set(c.id, c.record);
          else copy.delete(c.id);
        }
        stored = { cursor: batch.cursor };
      };
    };
    const first = await sync({ client, state: null, apply: store() });
    expect(first).to.deep.include({ mode: 'full', walked: 3 });
    expect(stored).to.deep.equal(first.state);

    await changeCatalog(api, key, records);
    // One event per page; the "process" dies after applying two of the four.
    const interrupted = await sync({ client, state: stored, apply: store(2), limit: 1 }).catch((e: Error) => e);
    expect((interrupted as Error).message).to.equal('crash');
    const resumed = await sync({ client, state: stored, apply: store(), limit: 1 });
    expect(resumed).to.deep.include({ mode: 'incremental', events: 2 });
    expect(copy).to.deep.equal(await publicCatalog(api, key));
  });

  it('library: records archived or deleted during the first walk move no unchanged record out of the copy', async () => {
    const start = await head(api, key);
    for (let i = 0; i < 12; i++) await createRecord(api.writes, { title: `Walked ${i}` });
    await collect(api, key, start, 12);
    // Pages of 5; right after the first page, two of its records leave the public list. An offset
    // walk then reads its second page two places too far down: two records that never change again
    // are in neither the walk nor the feed.
    const inner = createCatalogClient({ baseUrl: api.url, apiKey: key, minRetryDelayMs: 5 });
    let pages = 0;
    const client: typeof inner = {
      ...inner,
      async listLearningOpportunities(params = {}, call) {
        const page = await inner.listLearningOpportunities({ ...params, limit: 5 }, call);
        if (pages++ === 0) {
          const before = await head(api, key);
          await api.writes.archive(page.results[0]!.id);
          await api.writes.delete(page.results[1]!.id);
          await collect(api, key, before, 2);
        }
        return page;
      },
    };
    const copy = new Map<string, unknown>();
    await sync({
      client,
      state: null,
      apply: async (batch) => {
        if (batch.reset) copy.clear();
        for (const c of batch.changes) {
          if (c.op === 'upsert') copy.set(c.id, c.record);
          else copy.delete(c.id);
        }
      },
    });
    const catalog = await publicCatalog(api, key);
    expect(catalog.size).to.equal(10);
    expect([...copy.keys()].sort()).to.deep.equal([...catalog.keys()].sort());
    expect(copy).to.deep.equal(catalog);
  });
});
