// Long and open session start windows (src/catalog/list-windows.ts outsideWindow): when few sessions
// lie outside a window, its page and exact total come from the records it does not match. Every
// record that could be counted wrong is here: without sessions, every session before the window,
// every one after it, one on each side (a gap holding the whole window), one at each bound, equal
// starts inside and outside, unpublished ones. Each query is answered both ways (the long form and,
// with its bound at 0, the sessions inside) and both must equal a plain SQL walk of the sessions.
// Windows open at their end and ahead of now, beside another filter, are read from the records'
// last starts instead (list-windows.ts lastStartFrom); the same walk checks them, with
// records whose last start is at and just before the bound.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { explainNodes, type PlanNode } from '../../bench/query/plans.ts';
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { parseListParameters } from '../../src/catalog/list-parameters.ts';
import { listStatement, type ListFilter, type ListQuery } from '../../src/catalog/list-query.ts';
import type { Visibility } from '../../src/catalog/read-model.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput, buildSession, resetCatalog } from '../support/factories.ts';

const DAY = 86_400_000;
const NOW = Date.now();
const FROM = NOW - 400 * DAY;
const BEFORE = NOW + 400 * DAY;
// An open window ahead of now (read from the last starts beside a format or a language: lastStartFrom).
const AHEAD = NOW + 30 * DAY;
const at = (ms: number) => new Date(ms).toISOString();

// The records each case is about: their sessions' starts (ms), relative to the window [FROM, BEFORE).
const EDGES: { name: string; starts: number[]; status?: 'DRAFT' | 'ARCHIVED' }[] = [
  { name: 'no session', starts: [] },
  { name: 'every session before', starts: [FROM - 30 * DAY, FROM - DAY] },
  { name: 'every session after', starts: [BEFORE, BEFORE + 9 * DAY] },
  { name: 'a gap holding the window', starts: [FROM - 5 * DAY, BEFORE + 5 * DAY] },
  { name: 'one inside', starts: [NOW + 3 * DAY] },
  { name: 'before, inside and after', starts: [FROM - 2 * DAY, NOW - 3 * DAY, BEFORE + 2 * DAY] },
  { name: 'at the start bound', starts: [FROM] },
  { name: 'just before the end bound', starts: [BEFORE - 1] },
  { name: 'equal starts inside', starts: [NOW + DAY, NOW + DAY] },
  { name: 'equal starts after', starts: [BEFORE + DAY, BEFORE + DAY] },
  { name: 'equal starts before', starts: [FROM - DAY, FROM - DAY] },
  { name: 'last at the bound ahead', starts: [NOW - DAY, AHEAD] },
  { name: 'last just before the bound ahead', starts: [NOW + DAY, AHEAD - 1] },
  { name: 'first ahead', starts: [AHEAD + DAY, AHEAD + 2 * DAY] },
  { name: 'in year 0001', starts: [Date.parse('0001-06-01T00:00:00.000Z')] },
  { name: 'a draft without a session', starts: [], status: 'DRAFT' },
  { name: 'a draft after', starts: [BEFORE + DAY], status: 'DRAFT' },
  { name: 'an archived one inside', starts: [NOW], status: 'ARCHIVED' },
];

type Row = { total: string; docs: string | null; n: number };

async function page(query: ListQuery, visibility: Visibility, limit: number, offset: number, outsideMax?: number) {
  const { rows } = await testDb().pool.query<Row>(listStatement(query, limit, offset, visibility, null, outsideMax));
  const row = rows[0]!;
  const ids = row.docs ? (JSON.parse(`[${row.docs}]`) as { id: string }[]).map((d) => d.id) : [];
  return { total: Number(row.total), ids };
}

// The oracle: the records (of the statuses, formats, languages and update times) with a session start in the window, in the sort's order.
async function walk(filter: ListFilter, statuses: string[], sort: string): Promise<string[]> {
  const order =
    sort === 'updatedAt'
      ? 'lo.updated_at asc, lo.id desc'
      : sort === 'nextSessionStartsAt'
        ? `(select min(s.starts_at) from lo_session s where s.learning_opportunity_id = lo.id and s.starts_at > now()) asc nulls last, lo.id desc`
        : 'lo.updated_at desc, lo.id desc';
  const { rows } = await testDb().pool.query<{ id: string }>(
    `select lo.id from learning_opportunity lo
      where lo.status = any($1) and ($2::text[] is null or lo.format = any($2)) and ($5::text[] is null or lo.language = any($5))
        and ($6::timestamptz is null or lo.updated_at >= $6)
        and exists (select from lo_session s where s.learning_opportunity_id = lo.id
                     and ($3::timestamptz is null or s.starts_at >= $3) and ($4::timestamptz is null or s.starts_at < $4))
      order by ${order}`,
    [
      statuses,
      filter.format ?? null,
      filter.startsFrom ?? null,
      filter.startsBefore ?? null,
      filter.language ?? null,
      filter.updatedSince ?? null,
    ],
  );
  return rows.map((r) => r.id);
}

describe('long and open start windows, from the records outside them', function () {
  this.timeout(120_000);

  before(async () => {
    await resetCatalog();
    await seedCatalog(testDb().pool, { count: 300, seed: 4121, batchSize: 150 });
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    for (const [i, edge] of EDGES.entries()) {
      const input = buildLearningOpportunityInput({
        id: randomUUID(),
        format: i % 2 ? 'ONLINE' : 'IN_PERSON',
        title: `Edge ${edge.name}`,
        sessions: edge.starts.map((s) => buildSession(at(s), 'Leipzig', 'DE')),
      });
      await writes.upsert(parseLearningOpportunityInput(input));
      if (edge.status !== 'DRAFT') await writes.publish(input.id);
      if (edge.status === 'ARCHIVED') await writes.archive(input.id);
    }
    await testDb().pool.query('analyze');
  });

  const windows: [string, ListFilter][] = [
    ['closed', { startsFrom: new Date(FROM), startsBefore: new Date(BEFORE) }],
    ['open after', { startsFrom: new Date(FROM) }],
    ['open before', { startsBefore: new Date(BEFORE) }],
    ['closed, with a format', { startsFrom: new Date(FROM), startsBefore: new Date(BEFORE), format: ['ONLINE'] }],
    ['open after, with a format', { startsFrom: new Date(FROM), format: ['IN_PERSON'] }],
    ['open after, ahead, with formats', { startsFrom: new Date(AHEAD), format: ['IN_PERSON', 'ONLINE'] }],
    ['open after, ahead, with a language', { startsFrom: new Date(AHEAD), language: ['en'] }],
    ['open after, ahead, updated since', { startsFrom: new Date(AHEAD), updatedSince: new Date(NOW - 3000 * DAY) }],
  ];
  const readers: [Visibility, string[] | undefined, string[]][] = [
    ['public', undefined, ['PUBLISHED']],
    ['internal', ['PUBLISHED', 'DRAFT'], ['PUBLISHED', 'DRAFT']],
    ['internal', undefined, ['PUBLISHED', 'DRAFT', 'ARCHIVED']],
  ];

  it('pages and counts every window exactly, both ways, in every order', async () => {
    let checked = 0;
    for (const [name, window] of windows)
      for (const [visibility, status, statuses] of readers)
        for (const sort of ['-updatedAt', 'updatedAt', 'nextSessionStartsAt'] as const) {
          const filter: ListFilter = { ...window, ...(status ? { status } : {}) };
          const query: ListQuery = { filter, q: null, sort, fields: null, facets: [] };
          const expected = await walk(filter, statuses, sort);
          const label = `${name}, ${visibility} ${statuses.join('+')}, ${sort}`;
          expect(expected.length, label).to.be.greaterThan(40);
          for (const outsideMax of [undefined, 0]) {
            const got: string[] = [];
            for (let offset = 0; offset < expected.length; offset += 40) {
              const p = await page(query, visibility, 40, offset, outsideMax);
              expect(p.total, `${label}, bound ${outsideMax ?? 'default'}`).to.equal(expected.length);
              got.push(...p.ids);
            }
            expect(got, `${label}, bound ${outsideMax ?? 'default'}`).to.deep.equal(expected);
            checked++;
          }
        }
    expect(checked).to.equal(windows.length * readers.length * 3 * 2);
  });

  it('counts facets over a long window as over its matches, beside filters counted every way', async () => {
    const window = { startsFrom: new Date(FROM), startsBefore: new Date(BEFORE) };
    const cases: [Visibility, ListFilter, string[]][] = [
      ['public', window, ['PUBLISHED']],
      ['public', { ...window, format: ['ONLINE'] }, ['PUBLISHED']], // the total without the window: facet_count
      ['public', { ...window, format: ['ONLINE', 'IN_PERSON'], language: ['en'] }, ['PUBLISHED']], // the bitmaps
      ['internal', { ...window, status: ['PUBLISHED', 'DRAFT'] }, ['PUBLISHED', 'DRAFT']], // catalog_count
    ];
    for (const [visibility, filter, statuses] of cases)
      for (const sort of ['-updatedAt', 'nextSessionStartsAt'] as const) {
        const query: ListQuery = { filter, q: null, sort, fields: null, facets: ['format', 'country'] };
        const run = async (outsideMax?: number) =>
          (await testDb().pool.query(listStatement(query, 5, 0, visibility, null, outsideMax))).rows[0];
        const [long, inside] = [await run(), await run(0)];
        const label = `${JSON.stringify(filter)} ${sort}`;
        expect(long, label).to.deep.equal(inside);
        const matches = await walk(filter, statuses, sort);
        expect(Number(long.total), label).to.equal(matches.length).and.to.be.greaterThan(5);
      }
  });

  it('finds a session in year 0001 with a window given in years 0001 to 0099, an offset reaching into 1 BC', async () => {
    const edge = 'Edge in year 0001';
    for (const [from, before] of [
      ['0001-01-01T00:00:00Z', '0099-12-31T23:59:59.999Z'],
      ['0001-01-01T00:30:00+01:00', '0001-06-01T00:00:00.001Z'],
    ]) {
      const query = parseListParameters({ startsFrom: from, startsBefore: before, format: 'ONLINE,IN_PERSON' });
      const { rows } = await testDb().pool.query<Row>(listStatement(query, 10, 0, 'public'));
      const titles = (JSON.parse(`[${rows[0]!.docs ?? ''}]`) as { title: string }[]).map((d) => d.title);
      expect(titles, `${from} to ${before}`).to.deep.equal([edge]);
      expect(Number(rows[0]!.total)).to.equal(1);
    }
    expect(() => parseListParameters({ startsBefore: '0000-12-31T00:00:00Z' }), 'year 0000').to.throw();
  });

  it('reads the records outside the window, not the sessions inside, when those outside are few', async () => {
    const query: ListQuery = {
      filter: { startsFrom: new Date(FROM), startsBefore: new Date(BEFORE) },
      q: null,
      sort: '-updatedAt',
      fields: null,
      facets: [],
    };
    // Sessions read from list_session's index, by the run's actual rows, and whether `wc` (the records outside) ran.
    const run = async (outsideMax?: number) => {
      const nodes = await explainNodes(testDb(), listStatement(query, 20, 0, 'public', null, outsideMax), 'analyze');
      const loops = (node: PlanNode) => node['Actual Loops'] as number;
      return {
        sessions: nodes
          .filter((node) => node['Relation Name'] === 'list_session')
          .reduce((sum, node) => sum + (node['Actual Rows'] as number) * loops(node), 0),
        outsideRan: nodes.some((node) => node['CTE Name'] === 'wc' && loops(node) > 0),
      };
    };
    const matches = (await walk(query.filter, ['PUBLISHED'], '-updatedAt')).length;
    const long = await run();
    const inside = await run(0);
    expect(inside, 'bound 0: every match counted from its first session inside').to.deep.include({ outsideRan: false });
    expect(inside.sessions).to.be.at.least(matches);
    expect(long.outsideRan, 'the records outside are read').to.equal(true);
    expect(long.sessions, 'only the sessions outside are read').to.be.below(matches / 4);
  });
});
