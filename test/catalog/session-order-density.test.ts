// sort=nextSessionStartsAt beside a filter whose total comes from the maintained counts (one
// provider): the page walks the sessions from now on only when the matches are dense enough to fill
// it soon (list-keys.ts byDensity), else it reads the matches. A provider whose courses have all
// ended ("upcoming courses of X", X closed) walked every future session of the catalog before
// finding that none of them is X's.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { explainNodes, type PlanNode } from '../../bench/query/plans.ts';
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { listStatement, type ListQuery } from '../../src/catalog/list-query.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput, buildSession, resetCatalog } from '../support/factories.ts';

const DAY = 86_400_000;
const CLOSED = 'Closed Academy';
const ENDED_LANGUAGE = 'eo';

/** The published records matching `where` (on learning_opportunity `lo`, `$1` its value) in session order: next session after now ascending, then those without one; ties and the rest by id desc. */
async function walk(where: string, value: string): Promise<string[]> {
  const { rows } = await testDb().pool.query<{ id: string }>(
    `select lo.id from learning_opportunity lo
      where lo.status = 'PUBLISHED' and ${where}
      order by (select min(s.starts_at) from lo_session s where s.learning_opportunity_id = lo.id and s.starts_at > now()) asc nulls last, lo.id desc`,
    [value],
  );
  return rows.map((r) => r.id);
}

/** The list_session rows a plan read, over all its loops. */
const sessionRowsRead = (nodes: PlanNode[]) =>
  nodes
    .filter((node) => node['Relation Name'] === 'list_session')
    .reduce((sum, node) => sum + (node['Actual Rows'] as number) * (node['Actual Loops'] as number), 0);

describe('session order beside a counted filter: the sessions walked, or the matches read', function () {
  this.timeout(120_000);

  before(async () => {
    await resetCatalog();
    await seedCatalog(testDb().pool, { count: 2000, seed: 3313, batchSize: 500 });
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    // A provider whose courses have all ended.
    for (let i = 0; i < 30; i++) {
      const starts = [Date.now() - (40 + i) * DAY, Date.now() - (10 + i) * DAY];
      const input = buildLearningOpportunityInput({
        id: randomUUID(),
        title: `Course ${i}`,
        provider: { name: CLOSED, url: 'https://provider.example.org' },
        sessions: starts.map((s) => buildSession(new Date(s).toISOString(), 'Leipzig', 'DE')),
      });
      await writes.upsert(parseLearningOpportunityInput(input));
      await writes.publish(input.id);
    }
    // A language whose many courses have all ended (or are self-paced): dense enough for the walk.
    const ended = Array.from({ length: 200 }, (_, i) =>
      buildLearningOpportunityInput({
        id: randomUUID(),
        title: `Kurso ${i}`,
        language: ENDED_LANGUAGE,
        sessions: i % 4 ? [buildSession(new Date(Date.now() - (5 + i) * DAY).toISOString(), 'Leipzig', 'DE')] : [],
      }),
    );
    await writes.upsertMany(ended.map((input) => parseLearningOpportunityInput(input)));
    await writes.publishMany(ended.map((input) => input.id));
    await testDb().pool.query('analyze');
  });

  const query = (provider: string): ListQuery => ({
    filter: { provider: [provider] },
    q: null,
    sort: 'nextSessionStartsAt',
    fields: null,
    facets: [],
  });

  it('pages a provider whose courses have all ended exactly, reading its records, not every future session', async () => {
    const expected = await walk('lo.provider_name = $1', CLOSED);
    expect(expected).to.have.length(30);
    const got: string[] = [];
    for (let offset = 0; offset < expected.length; offset += 10) {
      const { rows } = await testDb().pool.query<{ total: string; docs: string }>(
        listStatement(query(CLOSED), 10, offset, 'public'),
      );
      expect(Number(rows[0]!.total)).to.equal(30);
      got.push(...(JSON.parse(`[${rows[0]!.docs}]`) as { id: string }[]).map((d) => d.id));
    }
    expect(got).to.deep.equal(expected);

    const futureSessions = (
      await testDb().pool.query<{ n: number }>(
        `select count(*)::int as n from list_session where status = 'PUBLISHED' and starts_at > now()`,
      )
    ).rows[0]!.n;
    expect(futureSessions, 'the catalog has many future sessions').to.be.above(1000);
    const nodes = await explainNodes(testDb(), listStatement(query(CLOSED), 10, 0, 'public'), 'analyze');
    const sessionsRead = sessionRowsRead(nodes);
    expect(sessionsRead, 'future sessions walked').to.be.below(100);
  });

  it('pages a dense filter whose matches have no future session exactly, reading at most as many sessions as it has matches (found from outside: 503 at 15,000 records)', async () => {
    const all = await walk('lo.language = $1', ENDED_LANGUAGE);
    expect(all).to.have.length(200);
    for (const facets of [[], ['format']] as ListQuery['facets'][]) {
      const language: ListQuery = { ...query(CLOSED), filter: { language: [ENDED_LANGUAGE] }, facets };
      for (const offset of [0, 10, 190]) {
        const { rows } = await testDb().pool.query<{ total: string; docs: string }>(
          listStatement(language, 10, offset, 'public'),
        );
        expect(Number(rows[0]!.total)).to.equal(200);
        const ids = (JSON.parse(`[${rows[0]!.docs}]`) as { id: string }[]).map((d) => d.id);
        expect(ids, `offset ${offset}, facets ${facets.join()}`).to.deep.equal(all.slice(offset, offset + 10));
      }
      const nodes = await explainNodes(testDb(), listStatement(language, 10, 0, 'public'), 'analyze');
      // The bounded walk (200) and its check that it was cut (200 more): the whole walk read every future session.
      expect(sessionRowsRead(nodes), `future sessions read, facets ${facets.join()}`).to.be.at.most(400);
    }
  });

  it('pages a dense filter (one format) exactly by walking the sessions, reading few of them', async () => {
    const dense: ListQuery = { ...query(CLOSED), filter: { format: ['ONLINE'] } };
    const all = await walk('lo.format = $1', 'ONLINE');
    expect(all.length).to.be.above(300);
    for (const offset of [0, 10, 200]) {
      const { rows } = await testDb().pool.query<{ total: string; docs: string }>(
        listStatement(dense, 10, offset, 'public'),
      );
      expect(Number(rows[0]!.total)).to.equal(all.length);
      const ids = (JSON.parse(`[${rows[0]!.docs}]`) as { id: string }[]).map((d) => d.id);
      expect(ids, `offset ${offset}`).to.deep.equal(all.slice(offset, offset + 10));
    }
    const nodes = await explainNodes(testDb(), listStatement(dense, 10, 0, 'public'), 'analyze');
    const read = sessionRowsRead(nodes);
    expect(
      nodes.some((node) => node['Relation Name'] === 'list_session' && (node['Actual Loops'] as number) > 0),
      'the sessions are walked',
    ).to.equal(true);
    expect(read, 'sessions read for a page of 10').to.be.below(200);
  });
});
