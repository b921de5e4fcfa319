// Incremental sync of a view: the client library's sync({ view }) and `cli sync --view` keep a copy
// of the view (head of the view's feed, a walk of the list with the view's filters, then the view's
// feed, LEFT_VIEW removing) equal to a walk of GET /v1/learning-opportunities?<view>, across runs that
// move records in and out of the view; a state kept for one view is refused for another.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  CatalogHttpError,
  createCatalogClient,
  type LearningOpportunity,
  sync,
  type SyncBatch,
  viewFilter,
} from '@lods/client';
import type { Api } from '../../src/app/service.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { runCli } from '../client/cli-process.ts';
import { testDb } from '../hooks.ts';
import { getJson } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { feedSettled } from '../support/feed-horizon.ts';
import { startFeedApi } from '../feed/feed-support.ts';

const VIEW = 'format=IN_PERSON,HYBRID&country=de';

describe('sync of a view (client library and cli sync --view)', function () {
  this.timeout(120_000);
  let api: Api;
  let key: string;
  let dir: string;
  const inputs = new Map<string, Record<string, unknown> & { id: string }>();

  before(async () => {
    ({ api, key } = await startFeedApi());
    dir = await mkdtemp(join(tmpdir(), 'lods-sync-view-'));
    for (let i = 0; i < 12; i++) {
      const input = buildLearningOpportunityInput({ format: ['ONLINE', 'IN_PERSON', 'HYBRID'][i % 3] });
      await api.writes.upsert(parseLearningOpportunityInput(input));
      await api.writes.publish(input.id);
      inputs.set(input.id, input);
    }
  });
  after(async () => {
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** The view's records by a walk of the list: id -> record. */
  async function listed(): Promise<Map<string, LearningOpportunity>> {
    const res = await getJson(api, `/v1/learning-opportunities?${VIEW}&limit=100`, key);
    const body = res.body as { results: LearningOpportunity[]; pagination: { hasMore: boolean } };
    expect(body.pagination.hasMore).to.equal(false);
    return new Map(body.results.map((r) => [r.id, r]));
  }
  /** Moves records in and out of the view, archives one, deletes one. */
  async function edit(round: number): Promise<void> {
    const ids = [...inputs.keys()];
    for (const [i, id] of ids.entries()) {
      if ((i + round) % 3 !== 0) continue;
      const input: Record<string, unknown> & { id: string } = {
        ...inputs.get(id)!,
        format: ['ONLINE', 'IN_PERSON', 'HYBRID'][(i + round) % 3],
      };
      const sessions = (input.sessions as { location: { country: string } | null }[]).map((s) =>
        s.location ? { ...s, location: { ...s.location, country: round % 2 ? 'FR' : 'DE' } } : s,
      );
      inputs.set(id, { ...input, sessions });
      await api.writes.upsert(parseLearningOpportunityInput(inputs.get(id)));
    }
    await api.writes.archive(ids[round]!);
    await api.writes.delete(ids[round + 6]!);
    inputs.delete(ids[round + 6]!);
  }

  it('keeps a copy of the view equal to the list of the view, run after run', async () => {
    const caughtUp = (want: Record<string, unknown>) => {
      try {
        expect(Object.fromEntries(copy)).to.deep.equal(want);
        return true;
      } catch {
        return false;
      }
    };
    const client = createCatalogClient({ baseUrl: api.url, apiKey: key, retries: 0 });
    expect(viewFilter(VIEW)).to.deep.equal({ format: ['IN_PERSON', 'HYBRID'], country: ['de'] });
    const copy = new Map<string, LearningOpportunity>();
    const apply = async (batch: SyncBatch) => {
      if (batch.reset) copy.clear();
      for (const c of batch.changes) {
        if (c.op === 'upsert') copy.set(c.id, c.record);
        else copy.delete(c.id);
      }
    };
    const first = await sync({ client, view: VIEW, apply });
    expect(first.mode).to.equal('full');
    expect(Object.fromEntries(copy)).to.deep.equal(Object.fromEntries(await listed()));
    let state = first.state;
    for (const round of [1, 2]) {
      await edit(round);
      // The feed serves events below its horizon: a transaction open elsewhere in the cluster (a
      // parallel suite) holds them back for a moment, so sync again until the copy has caught up.
      const want = Object.fromEntries(await listed());
      let removals = 0;
      for (const until = Date.now() + 15_000; ;) {
        const next = await sync({ client, view: VIEW, state, apply });
        expect(next.mode).to.equal('incremental');
        removals += next.removals;
        state = next.state;
        if (caughtUp(want) || Date.now() > until) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(removals, `round ${round}: removals`).to.be.above(0);
      expect(Object.fromEntries(copy), `round ${round}`).to.deep.equal(want);
    }
    // The state belongs to its view.
    const refused = await sync({ client, view: 'format=ONLINE', state, apply }).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(CatalogHttpError);
    expect((refused as CatalogHttpError).status).to.equal(400);
    expect(JSON.stringify((refused as CatalogHttpError).problem)).to.include('after');
  });

  it('cli sync --view writes the view and keeps it current', async () => {
    const out = join(dir, 'view.jsonl');
    const state = join(dir, 'view-state.json');
    const args = ['sync', '--base-url', api.url, '--out', out, '--state', state, '--view', VIEW, '--json'];
    const read = async () =>
      new Map(
        (await readFile(out, 'utf8'))
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as LearningOpportunity)
          .map((r) => [r.id, r]),
      );
    const first = await runCli(args, { LODS_API_KEY: key });
    expect(first.code, first.stderr).to.equal(0);
    expect(JSON.parse(first.stdout)).to.include({ mode: 'full' });
    expect(Object.fromEntries(await read())).to.deep.equal(Object.fromEntries(await listed()));
    await edit(3);
    await feedSettled(testDb().pool);
    const next = await runCli(args, { LODS_API_KEY: key });
    expect(next.code, next.stderr).to.equal(0);
    expect(JSON.parse(next.stdout)).to.include({ mode: 'incremental' });
    expect(Object.fromEntries(await read())).to.deep.equal(Object.fromEntries(await listed()));
    const bad = await runCli([...args.slice(0, -3), '--view', 'sort=updatedAt', '--json'], { LODS_API_KEY: key });
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.match(/view/);
  });

  it('cli sync --view saves its cursor when only records outside the view changed, and the copy untouched', async () => {
    const out = join(dir, 'quiet.jsonl');
    const state = join(dir, 'quiet-state.json');
    const args = ['sync', '--base-url', api.url, '--out', out, '--state', state, '--view', VIEW, '--json'];
    expect((await runCli(args, { LODS_API_KEY: key })).code).to.equal(0);
    const copied = await stat(out);
    const before = (JSON.parse(await readFile(state, 'utf8')) as { cursor: string }).cursor;
    // Changes outside the view only: its feed passes over them.
    for (let i = 0; i < 3; i++) {
      const input = buildLearningOpportunityInput({ format: 'ONLINE' });
      await api.writes.upsert(parseLearningOpportunityInput(input));
      await api.writes.publish(input.id);
    }
    await feedSettled(testDb().pool);
    const next = await runCli(args, { LODS_API_KEY: key });
    expect(next.code, next.stderr).to.equal(0);
    expect(JSON.parse(next.stdout)).to.include({ mode: 'incremental', events: 0, saves: 1 });
    const after = (JSON.parse(await readFile(state, 'utf8')) as { cursor: string }).cursor;
    const head = await getJson(api, `/v1/events/head?view=${encodeURIComponent(VIEW)}`, key);
    // The stored cursor kept up with the view's feed (it stayed where the last change left it, and
    // fell out of the feed's retention for a quiet view); the copy was not rewritten for it.
    expect(after).to.not.equal(before);
    expect(after).to.equal((head.body as { cursor: string }).cursor);
    expect((await stat(out)).mtimeMs).to.equal(copied.mtimeMs);
  });

  it('takes the view of getEventsHead in its second argument, and refuses it in the first', async () => {
    const client = createCatalogClient({ baseUrl: api.url, apiKey: key, retries: 0 });
    const whole = (await client.getEventsHead()).cursor;
    const ofView = (await client.getEventsHead({}, { view: VIEW })).cursor;
    expect(ofView).to.not.equal(whole);
    // Given first (as listEvents takes its parameters), the view was silently the whole feed's head.
    const refused = await client.getEventsHead({ view: VIEW } as never).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(TypeError);
    expect((refused as Error).message).to.include('second argument');
  });
});
