// GET /v1/calendar.ics: the sessions of exactly the records the list returns with the same filter,
// as an iCalendar subscription that a real parser (ical.js) reads back: one VEVENT per session,
// stable UIDs, the sessions' times, the records' titles; lines folded at 75 octets without
// splitting a character, CRLF; ETag and 304; the view parameters only (any other is a 400 naming
// it). A calendar app sends no headers, so this path alone takes its key as `?key=`, which must
// hold calendar:read; every other path still refuses a key in the URL, and the key appears in no
// log line and no problem body.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import ICAL from 'ical.js';
import type { Api } from '../../src/app/service.ts';
import {
  CALENDAR_EVENTS_MAX,
  CALENDAR_PARAMETERS,
  type CalendarRecord,
  calendarQuery,
  renderCalendar,
  renderCalendarInTurns,
} from '../../src/catalog/calendar-ics.ts';
import { contentLine, escapeText } from '../../src/catalog/ics-text.ts';
import { LIST_PARAMETERS } from '../../src/catalog/list-parameters.ts';
import { createListReads } from '../../src/catalog/list-query.ts';
import { readsWithin } from '../../src/db/deadline-reads.ts';
import { createCalendarCache } from '../../src/http/v1/calendar-cache.ts';
import { createQueryGate } from '../../src/kernel/query-gate.ts';
import { testDb } from '../hooks.ts';
import { calendarRenders } from '../../src/kernel/metrics.ts';
import { captureLogger, type LogCapture, startApiWithLogger } from '../ops/ops-support.ts';
import { startProxiedApi } from '../support/proxied-api.ts';
import { createTestKey, getJson } from '../support/api.ts';
import { createRecord, resetCatalog } from '../support/factories.ts';
import { countLoopPasses } from '../support/loop-passes.ts';
import { expectInvalidParams, expectProblem } from '../support/problem.ts';

type Session = {
  id: string;
  startsAt: string;
  endsAt: string | null;
  timezone: string | null;
  format: string | null;
  location: { name: string | null; address: string | null; city: string | null; country: string | null } | null;
};
type ListedRecord = { id: string; title: string; url: string | null; updatedAt: string; sessions: Session[] };
type ListBody = { results: ListedRecord[]; pagination: { next: number; hasMore: boolean } };
type Raw = { status: number; headers: Headers; text: string; bytes: Buffer };
type Parsed = {
  uid: string;
  summary: string;
  start: number;
  /** DTSTART's zone: its TZID, or UTC. */
  zone: string;
  end: number | null;
  location: string | null;
  description: string | null;
  url: string | null;
  lastModified: number;
};

const CALENDAR = '/v1/calendar.ics';
const CRLF = Buffer.from('\r\n');
const toSecond = (iso: string) => Math.floor(Date.parse(iso) / 1000) * 1000;

const session = (
  startsAt: string,
  endsAt: string | null,
  place: [string | null, string | null] | null,
  format = 'IN_PERSON',
): Record<string, unknown> => ({
  id: randomUUID(),
  startsAt,
  endsAt,
  timezone: null,
  format,
  location: place ? { name: 'Hall 2', address: 'Am Markt 1', city: place[0], country: place[1] } : null,
  capacity: null,
});

/** The factory's sessions (Berlin, and online without a place), with ids kept for a revision. */
const BERLIN_SESSIONS = [
  {
    ...session('2027-03-01T09:00:00.000Z', '2027-03-01T17:00:00.000Z', null),
    location: { name: 'Campus North', address: '1 Market Street', city: 'Berlin', country: 'DE' },
  },
  session('2027-03-08T09:00:00.000Z', null, null, 'ONLINE'),
];

/** Long, non-ASCII, with characters of 2, 3 and 4 octets at every offset of a fold. */
const LONG_TITLE = `Ünïcödé Wëldïng — 日本語の溶接講座 🎓🔥 ${'Grüße aus Köln, 東京; ✓ 🎓 '.repeat(14)}`.trim();

describe('GET /v1/calendar.ics', () => {
  let api: Api;
  let log: LogCapture;
  let catalogKey: string;
  let calendarKey: string;
  let bothKey: string;
  let graphKey: string;
  const ids: Record<string, string> = {};

  before(async function () {
    this.timeout(60_000);
    await resetCatalog();
    log = captureLogger('debug');
    api = await startApiWithLogger(log.logger);
    catalogKey = await createTestKey(['catalog:read']);
    calendarKey = await createTestKey(['calendar:read']);
    bothKey = await createTestKey(['catalog:read', 'calendar:read']);
    graphKey = await createTestKey(['graphql:read']);
    const records: [string, Record<string, unknown>, boolean?][] = [
      ['berlin', { sessions: BERLIN_SESSIONS }], // the factory's record: HYBRID, en, Northwind University
      [
        'online',
        {
          title: 'Online welding',
          format: 'ONLINE',
          language: 'de',
          topics: ['welding'],
          provider: { name: 'Harbor College', url: null },
          sessions: [
            session('2027-04-01T08:00:00.000Z', '2027-04-01T10:00:00.000Z', null, 'ONLINE'),
            session('2027-04-08T08:00:00.000Z', '2027-04-08T10:00:00.000Z', null, 'ONLINE'),
            session('2027-04-15T08:00:00.000Z', null, null, 'ONLINE'),
          ],
        },
      ],
      [
        'lyon',
        {
          title: 'Soudure; niveau 1, partie \\ deux\nsoir',
          summary: 'Deux lignes,\r\navec; tout\\',
          url: null,
          format: 'IN_PERSON',
          language: 'fr',
          topics: ['welding'],
          sessions: [session('2027-06-01T07:00:00.000Z', '2027-06-01T15:00:00.000Z', ['Lyon', 'FR'])],
        },
      ],
      [
        'saoPaulo',
        {
          title: LONG_TITLE,
          format: 'IN_PERSON',
          language: 'pt-BR',
          sessions: [
            // Fractions of a second: iCalendar has none, the times are cut to the second.
            session('2027-05-01T10:00:00.750Z', '2027-05-01T12:30:00.250Z', ['São Paulo', 'BR']),
            session('2027-05-02T10:00:00.000Z', '2027-05-02T10:00:00.000Z', ['São Paulo', 'BR']),
          ],
        },
      ],
      ['noSessions', { title: 'Self-paced', format: 'ONLINE', sessions: [] }],
      [
        'past',
        { title: 'Past only', language: 'de', sessions: [session('2020-01-01T09:00:00.000Z', null, ['Köln', 'DE'])] },
      ],
      // Never in a calendar: not published, though it matches.
      ['draft', { title: 'Draft in Berlin' }, false],
    ];
    for (const [name, overrides, publish] of records)
      ids[name] = (await createRecord(api.writes, overrides, { publish: publish ?? true })).id;
  });
  after(async () => {
    await api?.close();
    await resetCatalog();
  });

  async function raw(path: string, init: RequestInit & { bearer?: string } = {}): Promise<Raw> {
    const headers = new Headers(init.headers);
    if (init.bearer) headers.set('authorization', `Bearer ${init.bearer}`);
    const res = await fetch(`${api.url}${path}`, { ...init, headers });
    const bytes = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, text: bytes.toString('utf8'), bytes };
  }

  /** The calendar of `filter`, with the calendar key in the URL (as a calendar app sends it). */
  async function calendar(filter: string, init: RequestInit = {}): Promise<Raw> {
    const res = await raw(`${CALENDAR}?${filter ? `${filter}&` : ''}key=${calendarKey}`, init);
    expect(res.status, `${filter}: ${res.text.slice(0, 300)}`).to.equal(200);
    return res;
  }

  /** Every record the list returns for `filter`, walking all its pages (two records a page). */
  async function listed(filter: string): Promise<ListedRecord[]> {
    const all: ListedRecord[] = [];
    for (let offset = 0; ;) {
      const res = await getJson(
        api,
        `/v1/learning-opportunities?${filter ? `${filter}&` : ''}limit=2&offset=${offset}`,
        catalogKey,
      );
      expect(res.status, res.text).to.equal(200);
      const body = res.body as ListBody;
      all.push(...body.results);
      if (!body.pagination.hasMore) return all;
      offset = body.pagination.next;
    }
  }

  function parse(text: string): { calendar: ICAL.Component; events: Parsed[] } {
    const calendar = new ICAL.Component(ICAL.parse(text));
    // The calendar's VTIMEZONEs, one per TZID its events name, are what ical.js converts local times by.
    const zones = calendar.getAllSubcomponents('vtimezone');
    ICAL.TimezoneService.reset();
    for (const zone of zones) ICAL.TimezoneService.register(zone);
    const events = calendar.getAllSubcomponents('vevent').map((vevent) => {
      const time = (name: string) => {
        const value = vevent.getFirstPropertyValue(name) as ICAL.Time | null;
        if (value === null) return null;
        const tzid = vevent.getFirstProperty(name)!.getParameter('tzid') as string | undefined;
        expect(value.zone?.tzid, `${name}: UTC, or the zone of its TZID and VTIMEZONE`).to.equal(tzid ?? 'UTC');
        return value.toJSDate().getTime();
      };
      const text = (name: string) => (vevent.getFirstPropertyValue(name) as string | null) ?? null;
      return {
        uid: text('uid')!,
        summary: text('summary')!,
        start: time('dtstart')!,
        zone: (vevent.getFirstProperty('dtstart')!.getParameter('tzid') as string | undefined) ?? 'UTC',
        end: time('dtend'),
        location: text('location'),
        description: text('description'),
        url: text('url'),
        lastModified: time('last-modified')!,
      };
    });
    return { calendar, events };
  }

  it('lists one VEVENT per session of exactly the records the list returns with the same filter', async function () {
    this.timeout(60_000);
    const filters = [
      '',
      'format=ONLINE',
      'format=HYBRID,IN_PERSON',
      'city=berlin',
      'city=S%C3%A3o%20Paulo',
      'country=de,FR',
      'language=DE',
      'language=pt-br',
      'topic=welding',
      'provider=Harbor%20College',
      'format=HYBRID&city=Berlin',
      'city=Nowhere',
    ];
    for (const filter of filters) {
      const records = await listed(filter);
      const { calendar: vcalendar, events } = parse((await calendar(filter)).text);
      expect(vcalendar.getFirstPropertyValue('version'), filter).to.equal('2.0');
      expect(vcalendar.getFirstPropertyValue('calscale'), filter).to.equal('GREGORIAN');
      expect(vcalendar.getFirstPropertyValue('prodid'), filter).to.be.a('string').with.length.above(0);
      expect(vcalendar.getFirstPropertyValue('x-wr-calname'), filter).to.be.a('string').with.length.above(0);
      expect(vcalendar.getFirstPropertyValue('x-lods-truncated'), filter).to.equal(null);

      const expected = records.flatMap((record) => record.sessions.map((s) => ({ record, session: s })));
      expect(events.map((e) => e.uid).sort(), filter).to.deep.equal(
        expected.map((e) => `${e.session.id}.${e.record.id}@lods`).sort(),
      );
      for (const { record, session: s } of expected) {
        const event = events.find((e) => e.uid === `${s.id}.${record.id}@lods`)!;
        expect(event.summary, filter).to.equal(record.title);
        expect(event.start, filter).to.equal(toSecond(s.startsAt));
        expect(event.zone, filter).to.equal(s.timezone ?? 'UTC');
        const end = s.endsAt === null || toSecond(s.endsAt) === toSecond(s.startsAt) ? null : toSecond(s.endsAt);
        expect(event.end, filter).to.equal(end);
        expect(event.url, filter).to.equal(record.url);
        expect(event.lastModified, filter).to.equal(toSecond(record.updatedAt));
      }
      if (filter === 'city=Nowhere') expect(events).to.deep.equal([]);
    }
    // What the filters found, so that the comparison above compared something.
    const everything = parse((await calendar('')).text).events;
    expect(everything).to.have.length(2 + 3 + 1 + 2 + 1);
    expect(everything.map((e) => e.summary)).not.to.include('Draft in Berlin');
  });

  it('gives each event its session’s place (or Online), the summary, and escaped text read back as written', async () => {
    const { events } = parse((await calendar('')).text);
    const byTitle = (title: string) => events.filter((e) => e.summary === title);
    const [berlin, online] = byTitle('Applied Data Engineering').sort((a, b) => a.start - b.start);
    expect(berlin!.location).to.equal('Campus North, 1 Market Street, Berlin, DE');
    expect(online!.location).to.equal('Online');
    expect(berlin!.description).to.equal('Build pipelines that hold up in production.');
    for (const event of byTitle('Online welding')) expect(event.location).to.equal('Online');
    const [lyon] = byTitle('Soudure; niveau 1, partie \\ deux\nsoir');
    expect(lyon, 'the title with ; , \\ and a line break').to.not.equal(undefined);
    expect(lyon!.description).to.equal('Deux lignes,\navec; tout\\');
    expect(lyon!.url).to.equal(null);
    expect(lyon!.location).to.equal('Hall 2, Am Markt 1, Lyon, FR');
  });

  it('gives a session with a time zone in its local time (TZID) and a VTIMEZONE per zone: the same instants across changes of offset', async () => {
    // Each pair: the day of a change of offset in its zone, a session before it and one after.
    const zoned = [
      ['Europe/Berlin', '2027-03-28T00:30:00.000Z', '2027-03-28T08:00:00.000Z'], // CET to CEST at 01:00 UTC
      ['Europe/Berlin', '2027-10-31T00:30:00.000Z', '2027-10-31T02:30:00.000Z'], // back at 01:00 UTC: 02:00-03:00 local twice
      ['America/New_York', '2027-03-14T06:00:00.000Z', '2027-03-14T08:00:00.000Z'],
      ['Australia/Sydney', '2027-04-03T14:00:00.000Z', '2027-04-03T17:00:00.000Z'], // southern: DST ends in April
      ['Asia/Kathmandu', '2027-05-01T03:15:00.000Z', '2027-05-01T04:15:00.000Z'], // +05:45, no change
    ] as const;
    const sessions = zoned.flatMap(([timezone, before, after]) =>
      [before, after].map(
        (startsAt) => ({ ...session(startsAt, null, ['Zoneville', 'NP']), timezone }) as Record<string, unknown>,
      ),
    );
    const record = await createRecord(api.writes, { title: 'Around the clock', sessions });
    try {
      const text = (await calendar('city=Zoneville')).text;
      expect(text).to.contain('DTSTART;TZID=Europe/Berlin:20270328T013000\r\n');
      expect(text).to.contain('DTSTART;TZID=Europe/Berlin:20270328T100000\r\n');
      expect(text).to.contain('DTSTART;TZID=Asia/Kathmandu:20270501T090000');
      expect(text).to.contain('DTSTART:20271031T003000Z\r\n');
      expect(text).to.contain('DTSTART;TZID=Europe/Berlin:20271031T033000\r\n');
      const { calendar: parsed, events } = parse(text);
      const tzids = parsed.getAllSubcomponents('vtimezone').map((z) => z.getFirstPropertyValue('tzid'));
      expect(tzids).to.deep.equal(['America/New_York', 'Asia/Kathmandu', 'Australia/Sydney', 'Europe/Berlin']);
      expect(events).to.have.length(sessions.length);
      for (const s of sessions) {
        const event = events.find((e) => e.uid === `${s.id as string}.${record.id}@lods`)!;
        // A local time that the change back repeats (00:30 UTC is 02:30 CEST, and 01:30 UTC 02:30 CET)
        // is read as either by parsers: such a session is given in UTC.
        expect(event.zone).to.equal(s.startsAt === '2027-10-31T00:30:00.000Z' ? 'UTC' : s.timezone);
        expect(new Date(event.start).toISOString(), `${s.timezone} ${s.startsAt as string}`).to.equal(s.startsAt);
      }
    } finally {
      await api.writes.delete(record.id);
    }
  });

  it('keeps each UID across fetches and edits: the session id and the record id', async () => {
    const first = parse((await calendar('')).text).events.map((e) => e.uid);
    const second = parse((await calendar('')).text).events.map((e) => e.uid);
    expect(second).to.deep.equal(first);
    for (const uid of first) expect(uid).to.match(/^[0-9a-f-]{36}\.[0-9a-f-]{36}@lods$/);
  });

  it('gives a copied record’s sessions (the same session ids in two records) UIDs of their own', async () => {
    const sessions = [session('2027-09-01T09:00:00.000Z', '2027-09-01T12:00:00.000Z', ['Gdańsk', 'PL'])];
    const original = await createRecord(api.writes, { title: 'Welding in Gdańsk', sessions });
    const copy = await createRecord(api.writes, { id: randomUUID(), title: 'Welding in Gdańsk (copy)', sessions });
    const { events } = parse((await calendar('city=Gda%C5%84sk')).text);
    expect(events.map((e) => e.summary).sort()).to.deep.equal(['Welding in Gdańsk', 'Welding in Gdańsk (copy)']);
    expect(new Set(events.map((e) => e.uid)).size).to.equal(2);
    expect(events.map((e) => e.uid).sort()).to.deep.equal(
      [original.id, copy.id].map((id) => `${sessions[0]!.id as string}.${id}@lods`).sort(),
    );
    for (const id of [original.id, copy.id]) await api.writes.delete(id);
  });

  it('writes CRLF line ends and lines of at most 75 octets, folding a long non-ASCII title between characters', async () => {
    const res = await calendar('language=pt-BR');
    expect(res.headers.get('content-type')).to.equal('text/calendar; charset=utf-8');
    const { bytes } = res;
    expect(bytes.subarray(-2).equals(CRLF), 'ends with CRLF').to.equal(true);
    expect(bytes.subarray(0, 17).toString()).to.equal('BEGIN:VCALENDAR\r\n');
    const lines: Buffer[] = [];
    for (let at = 0; at < bytes.length;) {
      const end = bytes.indexOf(CRLF, at);
      lines.push(bytes.subarray(at, end));
      at = end + 2;
    }
    const decoder = new TextDecoder('utf-8', { fatal: true });
    let folds = 0;
    for (const line of lines) {
      expect(line.length, line.toString()).to.be.at.most(75);
      expect(line.includes(0x0a) || line.includes(0x0d), 'no bare CR or LF').to.equal(false);
      // Every line on its own is whole UTF-8: no character is split across a fold.
      expect(() => decoder.decode(line), line.toString('hex')).not.to.throw();
      if (line[0] === 0x20) folds++;
    }
    const summaryLines = res.text.split('\r\n').findIndex((l) => l.startsWith('SUMMARY:'));
    expect(summaryLines).to.be.above(0);
    expect(folds, 'the long title is folded').to.be.above(5);
    const { events } = parse(res.text);
    expect(events).to.have.length(2);
    for (const event of events) expect(event.summary).to.equal(LONG_TITLE);
    expect(Buffer.byteLength(LONG_TITLE)).to.be.above(300);
  });

  it('folds at 75 octets with 1 to 4 octet characters at every offset, and escapes TEXT', () => {
    for (const char of ['a', 'é', '日', '🎓']) {
      for (let pad = 0; pad < 4; pad++) {
        const value = 'x'.repeat(pad) + char.repeat(200);
        const folded = contentLine(`SUMMARY:${value}`);
        expect(folded.endsWith('\r\n')).to.equal(true);
        const lines = folded.slice(0, -2).split('\r\n');
        expect(lines.length, char).to.be.above(2);
        for (const [i, line] of lines.entries()) {
          expect(Buffer.byteLength(line)).to.be.at.most(75);
          // ASCII folds use every line whole: 75 octets but the last.
          if (char === 'a' && i < lines.length - 1) expect(Buffer.byteLength(line)).to.equal(75);
          if (i > 0) expect(line[0]).to.equal(' ');
          expect(line.isWellFormed()).to.equal(true);
        }
        expect(lines.map((l, i) => (i ? l.slice(1) : l)).join('')).to.equal(`SUMMARY:${value}`);
      }
    }
    expect(escapeText('a\\b;c,d\ne\r\nf\rg\u0001h\ti')).to.equal('a\\\\b\\;c\\,d\\ne\\nf\\ng' + 'h\ti');
  });

  it('answers 304 to its ETag, a new tag when a record in it changes, HEAD as GET; Cache-Control as the list', async () => {
    const first = await calendar('city=berlin');
    const etag = first.headers.get('etag')!;
    expect(etag).to.match(/^"[0-9a-f]{32}"$/);
    expect(first.headers.get('cache-control')).to.equal('private, no-cache');
    expect((await calendar('city=berlin')).headers.get('etag')).to.equal(etag);

    const held = await raw(`${CALENDAR}?city=berlin&key=${calendarKey}`, { headers: { 'if-none-match': etag } });
    expect(held.status).to.equal(304);
    expect(held.text).to.equal('');
    expect(held.headers.get('etag')).to.equal(etag);
    expect(held.headers.get('cache-control')).to.equal('private, no-cache');
    const any = await raw(`${CALENDAR}?city=berlin&key=${calendarKey}`, { headers: { 'if-none-match': '*' } });
    expect(any.status).to.equal(304);
    const head = await raw(`${CALENDAR}?city=berlin&key=${calendarKey}`, { method: 'HEAD' });
    expect(head.status).to.equal(200);
    expect(head.headers.get('etag')).to.equal(etag);
    expect(head.text).to.equal('');
    // Another filter is another representation.
    expect((await calendar('city=lyon')).headers.get('etag')).not.to.equal(etag);

    await createRecord(api.writes, {
      id: ids.berlin,
      title: 'Applied Data Engineering, revised',
      sessions: BERLIN_SESSIONS,
    });
    const changed = await raw(`${CALENDAR}?city=berlin&key=${calendarKey}`, { headers: { 'if-none-match': etag } });
    expect(changed.status).to.equal(200);
    expect(changed.headers.get('etag')).not.to.equal(etag);
    const { events } = parse(changed.text);
    expect(events.map((e) => e.summary)).to.include('Applied Data Engineering, revised');
    // The revision keeps the records' session ids: the same UIDs.
    expect(events.map((e) => e.uid).sort()).to.deep.equal(
      parse(first.text)
        .events.map((e) => e.uid)
        .sort(),
    );
  });

  it('renders a calendar asked for again unchanged once, and again once a record in it changes', async () => {
    const renders = async () =>
      Object.fromEntries((await calendarRenders.get()).values.map((v) => [String(v.labels.cached), v.value]));
    const before = await renders();
    const first = await calendar('city=berlin&format=HYBRID');
    const again = await calendar('city=berlin&format=HYBRID');
    expect(again.text).to.equal(first.text);
    expect(again.headers.get('etag')).to.equal(first.headers.get('etag'));
    const after = await renders();
    expect((after.false ?? 0) - (before.false ?? 0), 'rendered').to.equal(1);
    expect((after.true ?? 0) - (before.true ?? 0), 'kept').to.equal(1);
    await createRecord(api.writes, {
      id: ids.berlin,
      title: 'Applied Data Engineering, cached?',
      sessions: BERLIN_SESSIONS,
    });
    const changed = await calendar('city=berlin&format=HYBRID');
    expect(parse(changed.text).events.map((e) => e.summary)).to.include('Applied Data Engineering, cached?');
  });

  it('takes the view parameters only: any other parameter (but key) is a 400 naming it, with every bad value', async () => {
    const cases: [string, string[]][] = [
      ['q=x', ['q']],
      ['sort=-updatedAt', ['sort']],
      ['limit=5&offset=0', ['limit', 'offset']],
      ['fields=title&facets=format&startsFrom=2027-01-01T00:00:00Z', ['fields', 'facets', 'startsFrom']],
      ['format=PODCAST', ['format']],
      ['format=PODCAST&q=x&city=a,,b', ['format', 'q', 'city']],
      ['language=de&language=en', ['language']],
    ];
    for (const [query, names] of cases) {
      const res = await raw(`${CALENDAR}?${query}&key=${calendarKey}`);
      const problem = expectInvalidParams(res, names);
      expect(problem.instance, query).to.equal(`${CALENDAR}?${query}`);
      expect(res.text).not.to.contain(calendarKey);
    }
    // The same with the key in Authorization.
    expectInvalidParams(await raw(`${CALENDAR}?q=x`, { bearer: catalogKey }), ['q']);
    expect(CALENDAR_PARAMETERS.every((p) => (LIST_PARAMETERS as readonly string[]).includes(p))).to.equal(true);
  });

  it('takes a key holding calendar:read alone in ?key=, a catalog:read or calendar:read key in Authorization, and refuses the rest', async () => {
    const status = async (path: string, bearer?: string) => {
      const res = await raw(path, { bearer });
      if (res.status >= 400) {
        const problem = expectProblem(res, res.status);
        expect(problem.instance, path).not.to.match(/key=/i);
      }
      // Nor its characters after the prefix, which a key percent-encoded once or twice keeps.
      for (const key of [catalogKey, calendarKey, bothKey, graphKey])
        expect(res.text, path).not.to.contain(key.slice(5));
      return res.status;
    };
    expect(await status(`${CALENDAR}?key=${calendarKey}`)).to.equal(200);
    // A key that can do more than read the calendar is refused in the URL (it works in the header).
    const mixed = await raw(`${CALENDAR}?format=ONLINE&key=${bothKey}`);
    expect(expectProblem(mixed, 403).detail).to.contain('"calendar:read" scope alone');
    expect(mixed.text).not.to.contain(bothKey);
    expect(await status(`${CALENDAR}?format=ONLINE`, bothKey)).to.equal(200);
    expect(await status(`${CALENDAR}?k%65y=${calendarKey}`), 'the name percent-encoded').to.equal(200);
    expect(await status(CALENDAR, catalogKey)).to.equal(200);
    expect(await status(CALENDAR, calendarKey)).to.equal(200);
    // A key in the URL must hold calendar:read itself.
    expect(await status(`${CALENDAR}?key=${catalogKey}`)).to.equal(403);
    expect(await status(`${CALENDAR}?city=berlin&key=${graphKey}`)).to.equal(403);
    expect(await status(CALENDAR, graphKey)).to.equal(403);
    expect(await status(`${CALENDAR}?key=lods_${'x'.repeat(43)}`)).to.equal(401);
    expect(await status(`${CALENDAR}?key=`)).to.equal(401);
    expect(await status(CALENDAR)).to.equal(401);
    // With no key at all, the calendar's 401 names both ways to send one; other paths the header alone.
    expect(expectProblem(await raw(CALENDAR), 401).detail).to.contain('or a calendar:read key as ?key=<API_KEY>');
    expect(expectProblem(await raw('/v1/learning-opportunities'), 401).detail).not.to.contain('?key=');
    // One key, one way.
    expect(await status(`${CALENDAR}?key=${calendarKey}`, calendarKey)).to.equal(401);
    expect(await status(`${CALENDAR}?key=${calendarKey}&key=${calendarKey}`)).to.equal(401);
    const refused = await raw(`${CALENDAR}?city=berlin&key=${catalogKey}`);
    expect(expectProblem(refused, 403).instance).to.equal(`${CALENDAR}?city=berlin`);
    expect(refused.headers.get('www-authenticate')).to.contain('calendar:read');

    // Every other path still reads its key from Authorization alone, as before.
    for (const path of ['/v1/learning-opportunities', '/v1/events', `/v1/learning-opportunities/${ids.berlin}`]) {
      expect(await status(`${path}?key=${bothKey}`), path).to.equal(401);
      expect(await status(`${path}?key=${calendarKey}`), path).to.equal(401);
    }
    expect(await status('/v1/learning-opportunities?limit=1', bothKey)).to.equal(200);
    // A key pasted into a URL that is no endpoint, or in another case, is not echoed either.
    for (const [path, code] of [
      [`${CALENDAR}/?key=${calendarKey}`, 404],
      [`/v1/Calendar.ics?key=${calendarKey}`, 404],
      [`/v1/nope?format=ONLINE&key=${calendarKey}`, 404],
      [`/graphql?key=${graphKey}`, 405],
      [`${CALENDAR}?KEY=${calendarKey}`, 401],
      [`/console/nope?Key=${bothKey}`, 404],
      // ... nor under a misspelt or malformed name, alone, or as a path segment.
      [`${CALENDAR}?key%00=${calendarKey}`, 401],
      [`${CALENDAR}?k%zzey=${calendarKey}`, 401],
      [`${CALENDAR}?${calendarKey}`, 401],
      [`${CALENDAR}?city=berlin&apikey=${encodeURIComponent(calendarKey).replace('_', '%5F')}`, 401],
      [`/v1/learning-opportunities/${calendarKey}`, 401],
    ] as const)
      expect(await status(path), path).to.equal(code);
    // ... nor quoted back in a problem's detail or parameter names, with a key that is let in.
    const twice = calendarKey.replace('_', '%255F');
    for (const [path, code] of [
      [`${CALENDAR}?${calendarKey}`, 400],
      [`/v1/learning-opportunities?${calendarKey}%zz`, 400],
      [`/v1/learning-opportunities/${calendarKey}/sessions`, 404],
      [`/v1/nope/${twice}?q=${twice}`, 404],
      // Escapes that are not UTF-8 beside it: the name is quoted as sent, the path decoded escape by escape.
      [`/v1/learning-opportunities?%6C${calendarKey.slice(1)}%FF=1`, 400],
      [`/v1/nope/%FF%6C${calendarKey.slice(1)}`, 404],
      // A view encoded three times: the view's parser decodes it once more before it quotes a name.
      [
        `/v1/events?view=${encodeURIComponent(encodeURIComponent(encodeURIComponent(`provider=${calendarKey}&x=1`)))}`,
        400,
      ],
    ] as const)
      expect(await status(path, bothKey), path).to.equal(code);
    // A calendar:read key reads the calendar and nothing else.
    expect(await status('/v1/learning-opportunities', calendarKey)).to.equal(403);
    expect(await status('/v1/events', calendarKey)).to.equal(403);
  });

  it('keeps every key given in a URL out of the log', async () => {
    const secret = await createTestKey(['calendar:read']);
    const before = log.lines().length;
    await calendar('');
    for (const path of [
      `${CALENDAR}?key=${secret}`,
      `${CALENDAR}?q=x&key=${secret}`,
      `${CALENDAR}?key=${secret}`,
      `/v1/learning-opportunities?key=${secret}`,
      `${CALENDAR}?city=%zz&key=${secret}`,
      `/v1/learning-opportunities/${secret}`,
    ])
      await raw(path);
    await raw(`${CALENDAR}?key=${secret}`, { bearer: secret });
    // The access lines are written when each response closes.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const lines = log.lines().slice(before);
    const access = lines.filter((l) => l.msg === 'request');
    expect(access.length).to.be.at.least(7);
    for (const line of access)
      expect(line.path).to.be.oneOf([CALENDAR, '/v1/learning-opportunities', '/v1/learning-opportunities/[redacted]']);
    expect(log.text()).not.to.contain(secret);
    expect(log.text()).not.to.contain(calendarKey);
    expect(log.text()).not.to.contain(secret.slice(5, 30));
  });

  it('keeps the key out of the log lines and problems of a failure too (database unreachable: 503)', async function () {
    this.timeout(30_000);
    const outage = captureLogger('debug');
    const proxied = await startProxiedApi({ api: { logger: outage.logger } });
    try {
      // A key this process has not seen: its look-up needs the database.
      const secret = await createTestKey(['calendar:read']);
      proxied.proxy.cut();
      const res = await fetch(`${proxied.api.url}${CALENDAR}?city=berlin&key=${secret}`);
      const text = await res.text();
      const problem = expectProblem({ status: res.status, headers: res.headers, text }, 503);
      expect(problem.instance).to.equal(`${CALENDAR}?city=berlin`);
      expect(text).not.to.contain(secret);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const warned = outage.lines().filter((l) => l.msg === 'database unavailable');
      expect(warned.map((l) => l.path)).to.deep.equal([CALENDAR]);
      expect(outage.text()).not.to.contain(secret);
      expect(outage.text()).not.to.contain(secret.slice(5, 30));
    } finally {
      await proxied.close();
    }
  });

  it('is bounded: whole records only, at most CALENDAR_EVENTS_MAX events and maxBytes, and says when it left records out', () => {
    const record = (n: number, sessions: number): CalendarRecord => ({
      id: randomUUID(),
      title: `Record ${n}`,
      summary: null,
      url: null,
      format: 'ONLINE',
      updatedAt: '2026-01-01T00:00:00.000Z',
      sessions: Array.from({ length: sessions }, (_, i) => ({
        id: randomUUID(),
        startsAt: new Date(Date.UTC(2027, 0, 1 + i)).toISOString(),
        endsAt: null,
        timezone: null,
        format: null,
        location: null,
      })),
    });
    const records = Array.from({ length: 10 }, (_, n) => record(n, 3));
    const whole = renderCalendar(records, 10, { name: 'All', maxBytes: 8 * 1024 * 1024 });
    expect(whole).to.include({ events: 30, records: 10, truncated: false });
    expect(whole.text).not.to.contain('X-LODS-TRUNCATED');
    // More matching records than were read: truncated.
    expect(renderCalendar(records, 11, { name: 'All', maxBytes: 8 * 1024 * 1024 }).truncated).to.equal(true);

    const maxBytes = Math.floor(Buffer.byteLength(whole.text) / 2);
    const half = renderCalendar(records, 10, { name: 'All', maxBytes });
    expect(half.truncated).to.equal(true);
    expect(Buffer.byteLength(half.text)).to.be.at.most(maxBytes);
    expect(half.events).to.equal(half.records * 3);
    expect(half.records).to.be.within(3, 5);
    const parsed = new ICAL.Component(ICAL.parse(half.text));
    expect(parsed.getFirstPropertyValue('x-lods-truncated')).to.equal('TRUE');
    expect(parsed.getAllSubcomponents('vevent')).to.have.length(half.events);

    const many = [record(0, CALENDAR_EVENTS_MAX - 1), record(1, 2), record(2, 1)];
    const capped = renderCalendar(many, 3, { name: 'Many', maxBytes: 64 * 1024 * 1024 });
    expect(capped).to.include({ events: CALENDAR_EVENTS_MAX - 1, records: 1, truncated: true });
  });
  it('renders in turns of the event loop for the API: the same bytes, other work running between its slices', async () => {
    const records: CalendarRecord[] = Array.from({ length: 500 }, (_, n) => ({
      id: randomUUID(),
      title: `Record ${n}`,
      summary: 'A summary long enough to be folded once: '.repeat(3),
      url: null,
      format: 'ONLINE',
      updatedAt: '2026-01-01T00:00:00.000Z',
      sessions: [
        {
          id: randomUUID(),
          startsAt: '2027-01-01T09:00:00.000Z',
          endsAt: null,
          timezone: 'Europe/Berlin',
          format: null,
          location: null,
        },
      ],
    }));
    const options = { name: 'All', maxBytes: 8 * 1024 * 1024 };
    const loop = countLoopPasses(); // how many turns the rendering let pass
    const inTurns = await renderCalendarInTurns(records, 500, options);
    loop.stop();
    expect(inTurns).to.deep.equal(renderCalendar(records, 500, options));
    expect(loop.passes(), 'turns of the event loop during the rendering').to.be.at.least(500 / 50 - 1);
  });
  it('renders a calendar asked for again while it renders once: the second request waits for the first rendering', async () => {
    const cache = createCalendarCache();
    let renders = 0;
    const render = async () => {
      renders++;
      await new Promise((resolve) => setImmediate(resolve)); // a rendering takes turns
      return { text: 'BEGIN:VCALENDAR', truncated: false };
    };
    const [one, two] = await Promise.all([cache.get('tag|name', render), cache.get('tag|name', render)]);
    expect(renders).to.equal(1);
    expect(two).to.equal(one);
    expect(await cache.get('tag|name', render)).to.equal(one);
    expect(renders, 'kept once rendered').to.equal(1);
  });
  it("keeps its key's query-class slot through its rendering: that key's next query waits, another key's does not", async () => {
    // What calendar.ts passes as holdUntil (kept until the calendar is sent), on a real gate and reads.
    const lists = createListReads({
      gate: createQueryGate({ perKey: 1, total: 2, queueWaitMs: 5000 }),
      reads: (signal) => readsWithin(testDb().pool, 5000, signal),
    });
    const query = calendarQuery({});
    let sent!: () => void;
    const holdUntil = new Promise<void>((resolve) => (sent = resolve));
    await lists.getPage(query, 10, 0, 'public', { keyId: 'k', holdUntil });
    let next = false;
    const sameKey = lists.getPage(query, 10, 0, 'public', { keyId: 'k' }).then(() => (next = true));
    await lists.getPage(query, 10, 0, 'public', { keyId: 'other' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(next, "the key's next query while its calendar renders").to.equal(false);
    sent();
    await sameKey;
    expect(next, 'once the calendar is sent').to.equal(true);
  });
});
