// Validation of LearningOpportunityInput: every bad value is BAD_USER_INPUT with a stable path in
// extensions.invalidParams, and a rejected upsert writes nothing (a new id stays absent, an
// existing record keeps its exact bytes).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { graphql, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput, type LearningOpportunityInput } from '../support/factories.ts';
import { mutate, onlyError, UPSERT } from '../support/graphql-documents.ts';

type Input = LearningOpportunityInput;
type Change = (input: Input) => Record<string, unknown>;

const first = (input: Input, collection: string) => (input[collection] as Record<string, unknown>[])[0]!;
/** The input with the first item of `collection` changed. */
const item =
  (collection: string, change: Record<string, unknown>): Change =>
  (input) => ({
    [collection]: [{ ...first(input, collection), ...change }, ...(input[collection] as unknown[]).slice(1)],
  });
const session = (change: Record<string, unknown>) => item('sessions', change);

// [what, change, the invalidParams names expected]
const CASES: [string, Change, string[]][] = [
  ['a malformed nested session id', session({ id: 'session-1' }), ['input.sessions[0].id']],
  ['a malformed deadline id', item('deadlines', { id: '1234' }), ['input.deadlines[0].id']],
  ['a malformed faq id', item('faqs', { id: `${randomUUID()}0` }), ['input.faqs[0].id']],
  ['a malformed review id', item('externalReviews', { id: '' }), ['input.externalReviews[0].id']],
  ['a malformed accolade id', item('accolades', { id: 'g'.repeat(36) }), ['input.accolades[0].id']],
  ['a timestamp without a zone', session({ startsAt: '2027-03-01T09:00:00' }), ['input.sessions[0].startsAt']],
  ['a date without a time', session({ startsAt: '2027-03-01' }), ['input.sessions[0].startsAt']],
  [
    'a timestamp with a space for T',
    item('deadlines', { dueAt: '2027-02-01 23:59:59Z' }),
    ['input.deadlines[0].dueAt'],
  ],
  ['month 13', session({ endsAt: '2027-13-01T00:00:00Z' }), ['input.sessions[0].endsAt']],
  ['February 30th', item('deadlines', { dueAt: '2027-02-30T12:00:00Z' }), ['input.deadlines[0].dueAt']],
  ['April 31st', item('accolades', { awardedAt: '2026-04-31T00:00:00.000Z' }), ['input.accolades[0].awardedAt']],
  [
    'February 29th of a common year',
    session({ startsAt: '2027-02-29T09:00:00Z', endsAt: null }),
    ['input.sessions[0].startsAt'],
  ],
  ['hour 24', item('deadlines', { dueAt: '2027-01-31T24:00:00Z' }), ['input.deadlines[0].dueAt']],
  ['hour 25', item('externalReviews', { reviewedAt: '2026-06-01T25:00:00Z' }), ['input.externalReviews[0].reviewedAt']],
  ['year 0000', session({ startsAt: '0000-06-01T00:00:00Z', endsAt: null }), ['input.sessions[0].startsAt']],
  [
    'a year past 9999 once in UTC',
    item('deadlines', { dueAt: '9999-12-31T23:00:00-05:00' }),
    ['input.deadlines[0].dueAt'],
  ],
  [
    'an offset beyond 23 hours',
    item('deadlines', { dueAt: '2027-01-01T00:00:00+25:00' }),
    ['input.deadlines[0].dueAt'],
  ],
  ['a word for a timestamp', item('deadlines', { dueAt: 'tomorrow' }), ['input.deadlines[0].dueAt']],
  ['an ftp URL', () => ({ url: 'ftp://courses.example.org/x' }), ['input.url']],
  ['a javascript: URL', () => ({ url: 'javascript:alert(1)' }), ['input.url']],
  ['a URL with user and password', () => ({ url: 'https://user:secret@courses.example.org/' }), ['input.url']],
  [
    'a URL with a user name',
    (i) => ({ provider: { ...(i.provider as object), url: 'https://admin@northwind.example.org' } }),
    ['input.provider.url'],
  ],
  ['a relative URL', item('externalReviews', { url: '/reviews/1' }), ['input.externalReviews[0].url']],
  ['a mailto URL', item('accolades', { url: 'mailto:awards@example.org' }), ['input.accolades[0].url']],
  [
    'a price with three fraction digits',
    () => ({ price: { amount: '12.345', currency: 'EUR' } }),
    ['input.price.amount'],
  ],
  ['a negative price', () => ({ price: { amount: '-1', currency: 'EUR' } }), ['input.price.amount']],
  ['a price that is not a number', () => ({ price: { amount: 'abc', currency: 'EUR' } }), ['input.price.amount']],
  ['a price in exponent form', () => ({ price: { amount: '1e3', currency: 'EUR' } }), ['input.price.amount']],
  ['an empty price', () => ({ price: { amount: '', currency: 'EUR' } }), ['input.price.amount']],
  ['a price with a comma', () => ({ price: { amount: '1,50', currency: 'EUR' } }), ['input.price.amount']],
  [
    'a price too large for the column',
    () => ({ price: { amount: '1000000000000.00', currency: 'EUR' } }),
    ['input.price.amount'],
  ],
  ['a lower-case currency', () => ({ price: { amount: '10.00', currency: 'eur' } }), ['input.price.currency']],
  ['a four-letter currency', () => ({ price: { amount: '10.00', currency: 'EURO' } }), ['input.price.currency']],
  [
    'a currency code ISO 4217 does not have',
    () => ({ price: { amount: '10.00', currency: 'XXY' } }),
    ['input.price.currency'],
  ],
  ['a language that is no tag', () => ({ language: 'not a language!' }), ['input.language']],
  ['a one-letter language', () => ({ language: 'e' }), ['input.language']],
  ['an empty language', () => ({ language: '' }), ['input.language']],
  ['an unknown time zone', session({ timezone: 'Mars/Olympus_Mons' }), ['input.sessions[0].timezone']],
  ['an offset for a time zone', session({ timezone: '+01:00' }), ['input.sessions[0].timezone']],
  [
    'endsAt before startsAt',
    session({ startsAt: '2027-03-01T09:00:00Z', endsAt: '2027-03-01T08:59:59.999Z' }),
    ['input.sessions[0].endsAt'],
  ],
  [
    'a rating above maxRating',
    item('externalReviews', { rating: 5.5, maxRating: 5 }),
    ['input.externalReviews[0].rating'],
  ],
  ['a negative rating', item('externalReviews', { rating: -1 }), ['input.externalReviews[0].rating']],
  ['a zero maxRating', item('externalReviews', { rating: 0, maxRating: 0 }), ['input.externalReviews[0].maxRating']],
  ['a negative capacity', session({ capacity: -1 }), ['input.sessions[0].capacity']],
  ['a negative review count', item('externalReviews', { reviewCount: -3 }), ['input.externalReviews[0].reviewCount']],
  [
    'two sessions with one id',
    (i) => ({ sessions: [first(i, 'sessions'), { ...(i.sessions as object[])[1], id: first(i, 'sessions').id }] }),
    ['input.sessions[1].id'],
  ],
  [
    'two faqs whose ids differ only in case',
    (i) => ({ faqs: [first(i, 'faqs'), { ...first(i, 'faqs'), id: String(first(i, 'faqs').id).toUpperCase() }] }),
    ['input.faqs[1].id'],
  ],
  ['a NUL character in the title', () => ({ title: 'Data\u0000Engineering' }), ['input.title']],
  ['a NUL character in a topic', () => ({ topics: ['data\u0000'] }), ['input.topics[0]']],
  [
    'a NUL character in a location',
    (i) => session({ location: { ...(first(i, 'sessions').location as object), city: '\u0000' } })(i),
    ['input.sessions[0].location.city'],
  ],
  ['a NUL character in a URL', () => ({ url: 'https://courses.example.org/\u0000' }), ['input.url']],
  ['a space in a URL', () => ({ url: 'https://courses.example.org/a b' }), ['input.url']],
  ['a brace in a URL', item('accolades', { url: 'https://awards.example.org/{id}' }), ['input.accolades[0].url']],
  ['a no-break space in a URL', () => ({ url: 'https://courses.example.org/a\u00a0b' }), ['input.url']],
  ['a lone surrogate in the description', () => ({ description: 'broken \ud800 text' }), ['input.description']],
  ['a blank title', () => ({ title: '   ' }), ['input.title']],
  ['an empty title', () => ({ title: '' }), ['input.title']],
  ['a title over 500 characters', () => ({ title: 'x'.repeat(501) }), ['input.title']],
  ['a blank provider name', (i) => ({ provider: { ...(i.provider as object), name: ' ' } }), ['input.provider.name']],
  ['a blank faq question', item('faqs', { question: '\t' }), ['input.faqs[0].question']],
  ['a blank topic', () => ({ topics: ['data', ''] }), ['input.topics[1]']],
  ['more than 50 topics', () => ({ topics: Array.from({ length: 51 }, (_, n) => `topic ${n}`) }), ['input.topics']],
  [
    'more than 200 sessions',
    (i) => ({ sessions: Array.from({ length: 201 }, () => ({ ...first(i, 'sessions'), id: randomUUID() })) }),
    ['input.sessions'],
  ],
  [
    'more than 200 faqs',
    () => ({ faqs: Array.from({ length: 201 }, (_, n) => ({ id: randomUUID(), question: `Q${n}?`, answer: 'A.' })) }),
    ['input.faqs'],
  ],
  [
    'three problems at once',
    () => ({ title: '', url: 'ftp://x.org', price: { amount: '1.234', currency: 'X' } }),
    ['input.title', 'input.url', 'input.price.amount', 'input.price.currency'],
  ],
];

async function storedDoc(id: string): Promise<string | null> {
  const { rows } = await testDb().pool.query<{ doc: string }>('select doc from learning_opportunity where id = $1', [
    id,
  ]);
  return rows[0]?.doc ?? null;
}

describe('GraphQL input validation', () => {
  const served = useTestApi({ writer: ['catalog:write'] });
  let existing: Input;
  let existingDoc: string;

  before(async () => {
    existing = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', existing);
    await mutate(served.api, served.writer, 'publish', existing.id);
    existingDoc = (await storedDoc(existing.id))!;
  });

  for (const [what, change, names] of CASES) {
    it(`rejects ${what} (${names.join(', ')}) and writes nothing`, async () => {
      const fresh = buildLearningOpportunityInput();
      for (const input of [
        { ...fresh, ...change(fresh) },
        { ...existing, ...change(existing) },
      ]) {
        const res = await graphql(served.api, served.writer, UPSERT, { input });
        expect(res.status).to.equal(200);
        expect(res.body.data).to.equal(null);
        const error = onlyError(res);
        expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
        const params = error.extensions?.invalidParams ?? [];
        expect(params.map((p) => p.name).sort()).to.deep.equal([...names].sort());
        for (const p of params) expect(p.reason).to.be.a('string').with.length.above(0);
      }
      expect(await storedDoc(fresh.id), 'new record absent').to.equal(null);
      expect(await storedDoc(existing.id), 'existing record unchanged').to.equal(existingDoc);
    });
  }

  for (const id of ['not-a-uuid', `${randomUUID()}-1`, '']) {
    it(`rejects the record id ${JSON.stringify(id)} as input.id`, async () => {
      const error = onlyError(
        await graphql(served.api, served.writer, UPSERT, { input: buildLearningOpportunityInput({ id }) }),
      );
      expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
      expect(error.extensions?.invalidParams).to.deep.equal([{ name: 'input.id', reason: 'must be a UUID' }]);
    });
  }

  // Enums, required fields and Int are checked by GraphQL itself before any resolver runs; the
  // field is still named in invalidParams, as for every other bad input.
  const TYPE_LEVEL: [string, Change, string][] = [
    ['an unknown format', () => ({ format: 'PAPER' }), 'input.format'],
    ['an unknown session format', session({ format: 'VR' }), 'input.sessions[0].format'],
    ['an unknown deadline type', item('deadlines', { type: 'SOON' }), 'input.deadlines[0].type'],
    ['a lower-case enum value', () => ({ format: 'online' }), 'input.format'],
    ['a missing title', () => ({ title: null }), 'input.title'],
    ['a fractional capacity', session({ capacity: 1.5 }), 'input.sessions[0].capacity'],
    ['a rating given as a string', item('externalReviews', { rating: '4.5' }), 'input.externalReviews[0].rating'],
    ['an unknown field', () => ({ status: 'PUBLISHED' }), 'input.status'],
  ];
  for (const [what, change, name] of TYPE_LEVEL) {
    it(`rejects ${what} at the GraphQL type level (HTTP 400, BAD_USER_INPUT naming ${name}) and writes nothing`, async () => {
      const fresh = buildLearningOpportunityInput();
      const res = await graphql(served.api, served.writer, UPSERT, { input: { ...fresh, ...change(fresh) } });
      expect(res.status).to.equal(400);
      const error = onlyError(res);
      expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
      expect((error.extensions?.invalidParams as { name: string }[]).map((p) => p.name)).to.deep.equal([name]);
      expect(await storedDoc(fresh.id)).to.equal(null);
    });
  }

  it('names a type-level problem by the argument, whatever the client called its variable', async () => {
    const fresh = buildLearningOpportunityInput();
    const bulk = 'mutation($rows: [LearningOpportunityInput!]!) { upsertLearningOpportunities(inputs: $rows) { id } }';
    const res = await graphql(served.api, served.writer, bulk, {
      rows: [fresh, { ...fresh, id: randomUUID(), title: null }],
    });
    expect(res.status).to.equal(400);
    expect(onlyError(res).extensions?.invalidParams).to.deep.equal([
      { name: 'inputs[1].title', reason: 'Expected non-nullable type "String!" not to be null' },
    ]);
    expect(await storedDoc(fresh.id)).to.equal(null);
  });

  it('accepts current IANA zone names that ICU lists under older aliases', async () => {
    for (const timezone of ['Asia/Kolkata', 'Europe/Kyiv', 'America/Argentina/Buenos_Aires', 'UTC', 'Etc/GMT+1']) {
      const input = buildLearningOpportunityInput();
      const saved = await mutate(served.api, served.writer, 'upsert', { ...input, ...session({ timezone })(input) });
      expect((saved.sessions as { timezone: string }[])[0]!.timezone).to.equal(timezone);
    }
  });

  it('accepts the boundaries: 500-character title, 200 items, the largest price, equal start and end, rating = maxRating, URLs with every delimiter a URI allows, and with letters beyond ASCII (stored as URIs)', async () => {
    const input = buildLearningOpportunityInput({
      title: 't'.repeat(500),
      url: 'https://kurse.example.org/grüße/日本語',
      provider: { name: 'P', url: 'HTTPS://例え.JP/ä?q=ü#f' },
      price: { amount: '999999999999.99', currency: 'JPY' },
      language: 'pt-BR',
      faqs: Array.from({ length: 200 }, (_, n) => ({ id: randomUUID(), question: `Q${n}?`, answer: 'A.' })),
      sessions: [
        {
          id: randomUUID(),
          startsAt: '2028-02-29T09:00:00+05:30',
          endsAt: '2028-02-29T03:30:00Z',
          timezone: 'America/Argentina/Buenos_Aires',
          format: 'ONLINE',
          location: null,
          capacity: 0,
        },
      ],
      externalReviews: [
        {
          id: randomUUID(),
          source: 'S',
          url: "http://reviews.example.org/a?b=c&d=%20;(x)*!$'@,+#e:f",
          rating: 5,
          maxRating: 5,
          reviewCount: 0,
          excerpt: null,
          reviewedAt: null,
        },
      ],
    });
    const saved = await mutate(served.api, served.writer, 'upsert', input);
    expect(saved.title).to.have.length(500);
    expect((saved.provider as { url: string }).url, 'in its URI form').to.equal(
      'https://xn--r8jz45g.jp/%C3%A4?q=%C3%BC#f',
    );
    expect(saved.url, 'in its URI form').to.equal(
      'https://kurse.example.org/gr%C3%BC%C3%9Fe/%E6%97%A5%E6%9C%AC%E8%AA%9E',
    );
    expect(saved.faqs).to.have.length(200);
    expect(saved.price).to.deep.equal({ amount: '999999999999.99', currency: 'JPY' });
    expect((saved.sessions as { startsAt: string; endsAt: string }[])[0]).to.include({
      startsAt: '2028-02-29T03:30:00.000Z',
      endsAt: '2028-02-29T03:30:00.000Z',
    });
  });
});
