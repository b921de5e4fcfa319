// A country with a session start window ("courses in Germany next month"): read from one index of
// each record's countries times its start days (migration place_days) when the window is short, from
// the countries' index and the sessions' when it is long; the same records either way. The
// window's ends fall within a day, so the records on its first and last day are checked on their
// starts; the country and the start may be two sessions' (as the filter says); countries in any case.
// In next-session order, the records come by their next session after now, then those without one.
import { expect } from 'chai';
import { getJson, graphql, useTestApi } from '../support/api.ts';
import { buildSession, createRecord, resetCatalog } from '../support/factories.ts';

type ListBody = { results: { id: string }[]; pagination: { totalCount: number } };

const FROM = '2030-03-10T06:00:00.000Z';
const BEFORE = '2030-04-09T18:00:00.000Z';

/** Sessions at the given times and countries. */
const sessions = (...at: [string, string][]) => ({
  sessions: at.map(([startsAt, country]) => buildSession(startsAt, 'Town', country)),
});

describe('a country with a session start window', () => {
  const served = useTestApi({ restKey: ['catalog:read'], graphKey: ['graphql:read'] });
  const ids: Record<string, string> = {};

  /** Every page of a REST list at `limit`, in order, with the totals each page gave. */
  const walk = async (query: string, limit: number) => {
    const found: string[] = [];
    const totals = new Set<number>();
    for (let offset = 0; ; offset += limit) {
      const res = await getJson(
        served.api,
        `/v1/learning-opportunities?${query}&limit=${limit}&offset=${offset}`,
        served.restKey,
      );
      expect(res.status, res.text).to.equal(200);
      const body = res.body as ListBody;
      found.push(...body.results.map((r) => r.id));
      totals.add(body.pagination.totalCount);
      if (body.results.length < limit) return { found, totals: [...totals] };
    }
  };
  const named = (...names: string[]) => names.map((n) => ids[n]!);
  const byIdDesc = (names: string[]) => named(...names).sort((a, b) => (a < b ? 1 : -1));

  before(async function () {
    this.timeout(60_000);
    await resetCatalog();
    const records: [string, Record<string, unknown>, boolean?][] = [
      ['firstDayAfter', sessions(['2030-03-10T07:00:00.000Z', 'DE'])],
      ['firstDayBefore', sessions(['2030-03-10T05:00:00.000Z', 'DE'])],
      ['lastDayBefore', sessions(['2030-04-09T17:00:00.000Z', 'DE'])],
      ['lastDayAfter', sessions(['2030-04-09T19:00:00.000Z', 'DE'])],
      // Germany in one session, the window in another.
      ['twoSessions', sessions(['2029-12-03T09:00:00.000Z', 'DE'], ['2030-03-25T09:00:00.000Z', 'FR'])],
      ['lowerCase', sessions(['2030-03-21T09:00:00.000Z', 'de'])],
      ['france', sessions(['2030-03-22T09:00:00.000Z', 'FR'])],
      ['draft', sessions(['2030-03-23T09:00:00.000Z', 'DE']), false],
      // Past sessions only (no next session), and past with a future one.
      ['past', sessions(['2020-05-04T09:00:00.000Z', 'DE'])],
      ['pastAndFuture', sessions(['2020-05-11T09:00:00.000Z', 'DE'], ['2031-06-01T09:00:00.000Z', 'AT'])],
    ];
    // Ten more in the window, each with its own next session, some of them earlier than the window.
    for (let i = 0; i < 10; i++)
      records.push([
        `more${i}`,
        sessions([`2030-0${1 + (i % 3)}-1${i}T09:00:00.000Z`, 'AT'], [`2030-03-${11 + i}T12:00:00.000Z`, 'DE']),
      ]);
    for (const [name, overrides, publish] of records)
      ids[name] = (
        await createRecord(served.api.writes, { title: `Window ${name}`, ...overrides }, { publish: publish ?? true })
      ).id;
  });

  const inWindow = [
    'firstDayAfter',
    'lastDayBefore',
    'twoSessions',
    'lowerCase',
    ...[...Array(10).keys()].map((i) => `more${i}`),
  ];
  /** The records of `inWindow` by their next session (their first: every session here is after now), then id. */
  const byNextSession = (names: string[]) => {
    const first: Record<string, string> = {
      firstDayAfter: '2030-03-10T07',
      lastDayBefore: '2030-04-09T17',
      twoSessions: '2029-12-03T09',
      lowerCase: '2030-03-21T09',
      ...Object.fromEntries([...Array(10).keys()].map((i) => [`more${i}`, `2030-0${1 + (i % 3)}-1${i}T09`])),
    };
    return names
      .slice()
      .sort((a, b) => first[a]!.localeCompare(first[b]!) || (ids[a]! < ids[b]! ? 1 : -1))
      .map((n) => ids[n]!);
  };

  it('finds the records with a session in the window and one in the country, on the window’s end days too', async () => {
    for (const country of ['DE', 'de', 'De,XX']) {
      const query = `country=${country}&startsFrom=${FROM}&startsBefore=${BEFORE}&sort=nextSessionStartsAt`;
      const { found, totals } = await walk(query, 4);
      expect(found, query).to.deep.equal(byNextSession(inWindow));
      expect(totals, query).to.deep.equal([inWindow.length]);
    }
    // In list order, with the same total.
    const { found } = await walk(`country=DE&startsFrom=${FROM}&startsBefore=${BEFORE}`, 5);
    expect([...found].sort()).to.deep.equal(named(...inWindow).sort());
    // France: its own record, and the one whose French session is in the window.
    const france = await walk(`country=FR&startsFrom=${FROM}&startsBefore=${BEFORE}`, 10);
    expect([...france.found].sort()).to.deep.equal(named('france', 'twoSessions').sort());
  });

  it('finds the same records through the other indexes when the window is too long for one', async () => {
    // 4,000 days: past the 1,000 keys of the short windows' index.
    const query = `country=DE&startsFrom=2019-01-01T00:00:00.000Z&startsBefore=2029-12-31T00:00:00.000Z&sort=nextSessionStartsAt`;
    const { found, totals } = await walk(query, 3);
    // Sessions before 2029-12-31 in a record with Germany: the past ones (no next session: last, by id)
    // and the one whose German session is on 2029-12-03.
    const nextOf: Record<string, string> = { pastAndFuture: '2031-06-01', twoSessions: '2029-12-03' };
    const withNext = ['pastAndFuture', 'twoSessions'].sort((a, b) => nextOf[a]!.localeCompare(nextOf[b]!));
    expect(found).to.deep.equal([...named(...withNext), ...byIdDesc(['past'])]);
    expect(totals).to.deep.equal([3]);
    // Short and long windows agree where they overlap.
    const short = await walk(
      `country=DE&startsFrom=2020-05-01T00:00:00.000Z&startsBefore=2020-05-31T00:00:00.000Z&sort=nextSessionStartsAt`,
      1,
    );
    expect(short.found).to.deep.equal([...named('pastAndFuture'), ...named('past')]);
  });

  it('finds nothing in an empty window, and answers GraphQL readers alike (drafts when asked for)', async () => {
    const empty = await walk(`country=DE&startsFrom=${BEFORE}&startsBefore=${FROM}`, 10);
    expect(empty.found).to.deep.equal([]);
    expect(empty.totals).to.deep.equal([0]);
    const res = await graphql<{ learningOpportunities: ListBody }>(
      served.api,
      served.graphKey,
      `
        query ($filter: LearningOpportunityFilter) {
          learningOpportunities(filter: $filter, sort: NEXT_SESSION_STARTS_AT, limit: 100) {
            results {
              id
            }
            pagination {
              totalCount
            }
          }
        }
      `,
      { filter: { country: ['dE'], startsFrom: FROM, startsBefore: BEFORE, status: ['DRAFT', 'PUBLISHED'] } },
    );
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    const page = res.body.data!.learningOpportunities;
    expect(page.results.map((r) => r.id).sort()).to.deep.equal(named(...inWindow, 'draft').sort());
    expect(page.pagination.totalCount).to.equal(inWindow.length + 1);

    // A window alone, every status: the sessions' index, over all statuses (the records with a session
    // in 2030 whatever their country, the draft too).
    const year = await graphql<{ learningOpportunities: ListBody }>(
      served.api,
      served.graphKey,
      `
        query ($filter: LearningOpportunityFilter) {
          learningOpportunities(filter: $filter, limit: 100) {
            results {
              id
            }
            pagination {
              totalCount
            }
          }
        }
      `,
      { filter: { startsFrom: '2030-01-01T00:00:00.000Z', startsBefore: '2031-01-01T00:00:00.000Z' } },
    );
    expect(year.body.errors, JSON.stringify(year.body.errors)).to.equal(undefined);
    const outOfYear = new Set(named('past', 'pastAndFuture'));
    const wanted = Object.values(ids).filter((id) => !outOfYear.has(id));
    expect(year.body.data!.learningOpportunities.results.map((r) => r.id).sort()).to.deep.equal(wanted.sort());
    expect(year.body.data!.learningOpportunities.pagination.totalCount).to.equal(wanted.length);
  });
});
