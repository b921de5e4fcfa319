// Views (src/views/view.ts) against the list's own SQL: for generated records (the seed's content,
// plus records whose places and languages are spelled in odd cases) and many generated views, a
// record is in a view by inView exactly when a walk of GET /v1/learning-opportunities?<view> returns
// it; the SQL spelling (viewSql over view_facets) finds the same records, and view_facets() in SQL
// is viewFacets in JavaScript for every record. Parsing: canonical text, refusals naming each
// parameter.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { seededRandom } from '../../src/catalog/generate.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { AppError } from '../../src/kernel/errors.ts';
import {
  canonicalView,
  inView,
  parseView,
  pgLower,
  type View,
  viewDigest,
  type ViewFacets,
} from '../../src/views/view.ts';
import { viewSql } from '../../src/views/view-sql.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { cloneTestDatabase } from '../support/database.ts';
import { facetsOf, normalized } from './facets.ts';
import { createRecord } from '../support/factories.ts';

type Rec = Record<string, unknown> & { id: string };

/** Sessions at the given places (city, country), a week apart. */
const at = (...places: [string | null, string | null][]) =>
  places.map(([city, country], i) => ({
    id: randomUUID(),
    startsAt: new Date(Date.UTC(2030, 0, 1 + 7 * i, 9)).toISOString(),
    endsAt: null,
    timezone: null,
    format: 'IN_PERSON',
    location: city === null && country === null ? null : { name: 'Hall', address: null, city, country },
    capacity: null,
  }));

/** The invalid parameters of a refusal. */
function refusal(text: string, options?: { as?: string }): { name: string; reason: string }[] {
  try {
    parseView(text, options);
  } catch (error) {
    expect(error).to.be.instanceOf(AppError);
    expect((error as AppError).status).to.equal(400);
    return (error as AppError).invalidParams!;
  }
  throw new Error(`${text}: accepted`);
}

describe('views: one evaluator, checked against the list', () => {
  let api: Api;
  let key: string;
  let db: Database;
  let drop: () => Promise<void>;
  /** Every record's stored doc (drafts and archived records too). */
  let docs: Rec[];

  before(async function () {
    this.timeout(120_000);
    const clone = await cloneTestDatabase(
      JSON.parse(process.env.LODS_TEST_POSTGRES!) as { adminUrl: string; template: string },
    );
    drop = clone.drop;
    db = await connectDatabase(clone.url, { poolMax: 10, connectTimeoutMs: 3000, migrate: false });
    api = await startTestApi({ db });
    key = await createTestKey(['catalog:read'], db);
    await seedCatalog(db.pool, { count: 300, seed: 7321, now: new Date(), batchSize: 100 });
    // Places and languages in odd spellings (PostgreSQL lower-cases İ to i and a final Σ to σ).
    const odd: [Record<string, unknown>, 'publish' | 'draft' | 'archive'][] = [
      [{ language: 'de', topics: ['python'], sessions: at(['İSTANBUL', 'TR'], ['Berlin', 'de']) }, 'publish'],
      [{ language: 'pt-BR', topics: ['Python'], sessions: at(['ΣΟΦΊΑΣ', 'GR']) }, 'publish'],
      [{ language: 'pt-BR', format: 'ONLINE', sessions: at([null, null]) }, 'publish'],
      [{ language: null, provider: null, topics: [], sessions: at(['berlin', 'DE'], [null, 'AT']) }, 'publish'],
      [{ language: 'en', sessions: at(['São Paulo', 'BR'], ['SÃO PAULO', 'br']) }, 'publish'],
      [{ language: 'de', topics: ['python'], sessions: at(['Berlin', 'DE']) }, 'draft'],
      [{ language: 'de', topics: ['python'], format: 'ONLINE', sessions: at(['Berlin', 'DE']) }, 'archive'],
      [{ provider: { name: 'Ödland Akademie', url: null }, sessions: at(['Zürich', 'CH']) }, 'publish'],
    ];
    for (const [overrides, state] of odd) {
      const record = await createRecord(api.writes, overrides, { publish: state !== 'draft' });
      if (state === 'archive') await api.writes.archive(record.id);
    }
    // Seeded records updated: their events' facets come from list_entry.
    const seeded = (await db.pool.query<{ doc: string }>(`select doc from learning_opportunity limit 5`)).rows;
    for (const { doc } of seeded)
      await api.writes.upsert(parseLearningOpportunityInput({ ...(JSON.parse(doc) as Rec), title: 'Retitled' }));
    await db.pool.query('analyze');
    docs = (await db.pool.query<{ doc: string }>('select doc from learning_opportunity')).rows.map(
      (r) => JSON.parse(r.doc) as Rec,
    );
  });
  after(async function () {
    this.timeout(60_000);
    await api?.close();
    await db?.close();
    await drop?.();
  });

  /** The ids of a walk of the list with this query string. */
  async function walkList(query: string): Promise<string[]> {
    const ids: string[] = [];
    for (let offset = 0; ; offset += 100) {
      const res = await getJson(api, `/v1/learning-opportunities?${query}&limit=100&offset=${offset}`, key);
      expect(res.status, `${query}: ${res.text}`).to.equal(200);
      const body = res.body as { results: { id: string }[]; pagination: { hasMore: boolean } };
      ids.push(...body.results.map((r) => r.id));
      if (!body.pagination.hasMore) return ids.sort();
    }
  }

  /** Views drawn from the records' own values, in random cases and combinations, some matching nothing. */
  function generatedViews(count: number): string[] {
    const rnd = seededRandom(99);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
    const published = docs.filter((d) => d.status === 'PUBLISHED');
    const sessions = (d: Rec) => d.sessions as { location: { city: string | null; country: string | null } | null }[];
    const recase = (v: string) => {
      const r = rnd();
      return r < 0.25 ? v.toUpperCase() : r < 0.5 ? v.toLowerCase() : r < 0.6 ? pgLower(v) : v;
    };
    const valuesOf: Record<string, () => string> = {
      format: () => pick(['ONLINE', 'IN_PERSON', 'HYBRID']),
      language: () => {
        const l = (pick(published).language as string | null) ?? 'en';
        return rnd() < 0.3 ? l.toUpperCase() : l;
      },
      topic: () => pick(published.flatMap((d) => d.topics as string[]).concat(['no such topic'])),
      provider: () =>
        pick(
          published
            .map((d) => (d.provider as { name: string } | null)?.name ?? 'Nobody')
            .concat(['Northwind University']),
        ),
      country: () =>
        recase(pick(published.flatMap((d) => sessions(d).map((s) => s.location?.country ?? 'ZZ')).concat(['tr']))),
      city: () =>
        recase(
          pick(published.flatMap((d) => sessions(d).map((s) => s.location?.city ?? 'Nowhere')).concat(['σοφίας'])),
        ),
    };
    const names = Object.keys(valuesOf);
    const views: string[] = [];
    for (let i = 0; i < count; i++) {
      const chosen = [...new Set(Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(names)))];
      views.push(
        chosen
          .map((name) => {
            const values = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => valuesOf[name]!());
            return `${name}=${values.map(encodeURIComponent).join(',')}`;
          })
          .join('&'),
      );
    }
    return views;
  }

  it("gives view_facets() in SQL, the events' stored facets and viewFacets the same facets for every record", async () => {
    const { rows } = await db.pool.query<{ id: string; facets: ViewFacets }>(
      'select id, view_facets(doc::jsonb) as facets from learning_opportunity',
    );
    const sql = new Map(rows.map((r) => [r.id, normalized(r.facets)]));
    expect(sql.size).to.equal(docs.length);
    for (const doc of docs) expect(facetsOf(doc), doc.id).to.deep.equal(sql.get(doc.id));
    // The facets stored with each event (from list_entry, or the body) are its data's.
    const events = await db.pool.query<{ body: string; view_after: ViewFacets | null }>(
      'select body, view_after from event where xid is not null',
    );
    expect(events.rows.length).to.be.above(5);
    for (const e of events.rows) {
      const { data } = JSON.parse(e.body) as { data: unknown };
      expect(normalized(e.view_after), e.body.slice(0, 80)).to.deep.equal(facetsOf(data));
    }
  });

  it('finds exactly what a walk of the list finds, for every generated view, in JavaScript and in SQL', async function () {
    this.timeout(120_000);
    const texts = [
      ...generatedViews(80),
      'city=istanbul',
      'city=%C4%B0stanbul',
      'city=%CF%83%CE%BF%CF%86%CE%AF%CE%B1%CF%83', // σοφίασ: what PostgreSQL makes of ΣΟΦΊΑΣ
      'city=%CF%83%CE%BF%CF%86%CE%AF%CE%B1%CF%82', // σοφίας (final sigma): another word to lower()
      'country=AT&language=',
      'language=PT-br',
      'language=de,en&country=de,Br',
      'topic=python&country=DE',
      'provider=%C3%96dland%20Akademie',
      'city=s%C3%A3o%20paulo',
      'format=ONLINE',
    ].filter((text) => !text.endsWith('='));
    let nonEmpty = 0;
    for (const text of texts) {
      const view = parseView(text);
      const listed = await walkList(text);
      // The canonical text is the same list query.
      expect(await walkList(canonicalView(view)), `${text} as ${canonicalView(view)}`).to.deep.equal(listed);
      const evaluated = docs
        .filter((d) => inView(view, d))
        .map((d) => d.id)
        .sort();
      expect(evaluated, text).to.deep.equal(listed);
      const values: unknown[] = [];
      const { rows } = await db.pool.query<{ id: string }>(
        `select id from learning_opportunity where ${viewSql(view, 'view_facets(doc::jsonb)', (v) => {
          values.push(v);
          return `$${values.length}`;
        })} order by id`,
        values,
      );
      expect(
        rows.map((r) => r.id),
        `${text} in SQL`,
      ).to.deep.equal(listed);
      if (listed.length > 0) nonEmpty++;
    }
    expect(nonEmpty, 'views that find records').to.be.above(texts.length / 3);
  });

  it('keeps ARCHIVED and DRAFT states out of every view, and a missing record too', () => {
    const view = parseView('language=de&topic=python&city=berlin');
    const inBerlin = (d: Rec) =>
      (d.sessions as { location: { city: string | null } | null }[]).some((s) => s.location?.city === 'Berlin');
    const states = docs.filter((d) => (d.topics as string[]).includes('python') && d.language === 'de' && inBerlin(d));
    expect(states.map((d) => d.status).sort()).to.include.members(['ARCHIVED', 'DRAFT', 'PUBLISHED']);
    for (const d of states) expect(inView(view, d), String(d.status)).to.equal(d.status === 'PUBLISHED');
    expect(inView(view, null)).to.equal(false);
  });

  it('writes equal views as one canonical text (sorted parameters and values, places in lower case)', () => {
    const forms = [
      'format=ONLINE,HYBRID&country=DE,at&language=DE',
      'language=de&country=at,de&format=HYBRID,ONLINE',
      'country=AT&format=ONLINE,HYBRID,ONLINE&language=de&country=de'.replace('&country=de', ''),
    ];
    const a = parseView(forms[0]!);
    const b = parseView(forms[1]!);
    expect(canonicalView(a)).to.equal('country=at,de&format=HYBRID,ONLINE&language=de');
    expect(canonicalView(b)).to.equal(canonicalView(a));
    expect(viewDigest(b))
      .to.equal(viewDigest(a))
      .and.match(/^[0-9a-f]{16}$/);
    expect(viewDigest(parseView('format=ONLINE'))).to.not.equal(viewDigest(a));
    // The canonical text parses to itself.
    const spaced = parseView('city=S%C3%A3o+Paulo,%C4%B0STANBUL&provider=A%26B%20Co');
    expect(canonicalView(spaced)).to.equal('city=istanbul,s%C3%A3o%20paulo&provider=A%26B%20Co');
    expect(canonicalView(parseView(canonicalView(spaced)))).to.equal(canonicalView(spaced));
    const view: View = parseView('topic=b,a,b');
    expect(view).to.deep.equal({ topic: ['a', 'b'] });
  });

  it('refuses anything but the six parameters, and bad values, naming each', () => {
    expect(refusal('format=ONLINE&sort=updatedAt&limit=5&colour=red').map((p) => p.name)).to.deep.equal([
      'sort',
      'limit',
      'colour',
    ]);
    expect(refusal('format=PODCAST&topic=a,,b&q=x').map((p) => p.name)).to.deep.equal(['q', 'format', 'topic']);
    expect(refusal('format=ONLINE&format=HYBRID').map((p) => p.name)).to.deep.equal(['format']);
    expect(refusal('').map((p) => p.name)).to.deep.equal(['view']);
    expect(refusal('city=%zz').map((p) => p.name)).to.deep.equal(['city']);
    expect(refusal(`topic=${Array.from({ length: 51 }, (_, i) => `t${i}`).join(',')}`)[0]!.name).to.equal('topic');
    // As the value of a request parameter: every problem under that name, saying which.
    const named = refusal('updatedSince=2026-01-01T00:00:00.000Z&format=X', { as: 'view' });
    expect(named.map((p) => p.name)).to.deep.equal(['view', 'view']);
    expect(named[0]!.reason).to.match(/^updatedSince is not a view parameter/);
    expect(named[1]!.reason).to.match(/^format must be among/);
  });
});
