// The `pattern` of each list parameter is the service's own rule, not an approximation: the
// timestamps' is exactly what catalog/list-parameters.ts parses (field by field, every year, every
// offset, and near misses), `q`'s is exactly the words catalog/list-model.ts searches for (every
// character of the Basic Multilingual Plane), and the free-text list values' refuses exactly the
// values that would be a 400. The HTTP side (generated values sent to a running service) is
// generated-requests.test.ts.
import { expect } from 'chai';
import { searchQuery } from '../../src/catalog/list-model.ts';
import { parseListParameters, parseTimestamp } from '../../src/catalog/list-parameters.ts';
import { deref, type Json, loadOpenApiDocument } from './openapi-validator.ts';
import { nearMisses, valuesOfPattern } from './pattern-values.ts';

const doc = loadOpenApiDocument();
const schemaOf = (parameter: string): Json => {
  const schema = deref(doc, `#/components/parameters/${parameter}`).node.schema as Json;
  return typeof schema.$ref === 'string' ? deref(doc, schema.$ref).node : schema;
};
const TIMESTAMP_PARAMETERS = ['updatedSince', 'updatedBefore', 'startsFrom', 'startsBefore'];
const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Texts where the pattern and the service disagree (at most a few, to show). */
function disagreements(texts: Iterable<string>, pattern: RegExp, accepted: (text: string) => boolean): string[] {
  const out: string[] = [];
  for (const text of texts)
    if (pattern.test(text) !== accepted(text))
      out.push(`${JSON.stringify(text)}: pattern ${pattern.test(text) ? 'allows' : 'refuses'}, service the opposite`);
  return out.slice(0, 10);
}

/** The class of letters and digits (\p{L}, \p{N}) of the BMP, written as the document writes it. */
function bmpWordClass(): string {
  const hex = (n: number) => `\\u${n.toString(16).toUpperCase().padStart(4, '0')}`;
  const one = (n: number) => (/[0-9A-Za-z]/.test(String.fromCharCode(n)) ? String.fromCharCode(n) : hex(n));
  const ranges: [number, number][] = [];
  for (let c = 0; c <= 0xffff; c++) {
    if ((c >= 0xd800 && c <= 0xdfff) || !/[\p{L}\p{N}]/u.test(String.fromCharCode(c))) continue;
    const last = ranges.at(-1);
    if (last && last[1] === c - 1) last[1] = c;
    else ranges.push([c, c]);
  }
  return ranges.map(([a, b]) => (a === b ? one(a) : a + 1 === b ? one(a) + one(b) : `${one(a)}-${one(b)}`)).join('');
}

describe('the list parameters’ patterns are the service’s rules', () => {
  it('all four timestamps share one schema: date-time narrowed by a pattern', () => {
    for (const name of TIMESTAMP_PARAMETERS)
      expect(deref(doc, `#/components/parameters/${name}`).node.schema, name).to.deep.equal({
        $ref: '#/components/schemas/QueryTimestamp',
      });
    expect(schemaOf('updatedSince')).to.include({ type: 'string', format: 'date-time' });
    expect(schemaOf('updatedSince').pattern).to.be.a('string');
  });

  it('the timestamp pattern allows exactly what the service parses', () => {
    const pattern = new RegExp(schemaOf('updatedSince').pattern as string, 'u');
    const accepted = (text: string) => parseTimestamp(text) !== null;
    const texts: string[] = [];
    // Every year, on the days a calendar gets wrong; every month and day of a leap and a common year.
    for (let y = 0; y <= 9999; y++)
      for (const day of ['02-28', '02-29', '03-01', '12-31']) texts.push(`${pad(y, 4)}-${day}T00:00:00Z`);
    for (const y of ['2024', '2025', '2000', '2100'])
      for (let m = 0; m <= 13; m++) for (let d = 0; d <= 32; d++) texts.push(`${y}-${pad(m)}-${pad(d)}T12:00:00Z`);
    // Every hour, minute and second, edges of the day included.
    for (let n = 0; n <= 99; n++)
      texts.push(
        `2026-03-01T${pad(n)}:00:00Z`,
        `2026-03-01T09:${pad(n)}:00Z`,
        `2026-03-01T09:00:${pad(n)}Z`,
        `2026-12-31T23:59:${pad(n)}Z`,
      );
    // Fractions and zones: every offset, the ones Date would take too.
    for (const fraction of ['', '.', '.1', '.12', '.123', '.1234', '.123456', '.a'])
      texts.push(`2026-03-01T09:00:00${fraction}Z`, `2026-03-01T09:00:00${fraction}+01:00`);
    for (const sign of ['+', '-', '\u2212'])
      for (let h = 0; h <= 99; h++)
        for (let m = 0; m <= 99; m++) texts.push(`2026-03-01T09:00:00${sign}${pad(h)}:${pad(m)}`);
    texts.push(
      ...['z', 'UTC', '+0100', '+01', '+1:00', 'GMT+1', ' Z', '', '-00:00'].map((z) => `2026-03-01T09:00:00${z}`),
      ...['2026-03-01t09:00:00Z', '2026-03-01 09:00:00Z', '2026-03-01T09:00Z', '2026-03-01', '+002026-03-01T09:00:00Z'],
      ...['20260301T090000Z', '2026-3-1T9:00:00Z', ' 2026-03-01T09:00:00Z', '2026-03-01T09:00:00Z '],
    );
    // Near misses of generated values: one character replaced, removed, inserted or doubled.
    const schema = schemaOf('updatedSince') as Json & { pattern: string };
    const generated = valuesOfPattern(schema, 200, 11);
    texts.push(...generated, ...nearMisses(schema, generated, 2000, 12));
    expect(texts.length).to.be.above(60_000);
    expect(disagreements(texts, pattern, accepted)).to.deep.equal([]);
  });

  it('the q pattern allows exactly the texts that hold a word, over every character of the BMP', () => {
    const schema = schemaOf('q') as Json & { pattern: string; maxLength: number };
    expect(schema).to.include({ type: 'string', minLength: 1, maxLength: 500 });
    // The class of letters and digits must be the one Node's Unicode data gives (a new Node may
    // add letters): on a mismatch, this is the pattern to write into schema/openapi.json.
    const any = '[\\u0001-\\uD7FF\\uE000-\\uFFFF]';
    const expected = `^${any}*[${bmpWordClass()}]${any}*$`;
    expect(schema.pattern === expected, `q's pattern should be:\n${JSON.stringify(expected)}`).to.equal(true);

    const pattern = new RegExp(schema.pattern, 'u');
    const accepted = (text: string) => searchQuery(text) !== null && !text.includes('\u0000');
    const texts: string[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      if (c >= 0xd800 && c <= 0xdfff) continue;
      const ch = String.fromCharCode(c);
      texts.push(ch, `..${ch} `);
    }
    texts.push(
      '',
      ' ',
      '   ',
      '...',
      '!?',
      '\u00a0',
      '\u3000',
      'a\u0000b',
      '\u0000',
      '—',
      '€ $',
      '\u0301',
      'machine learn',
    );
    expect(disagreements(texts, pattern, accepted)).to.deep.equal([]);
    // What the pattern leaves out on purpose: beyond the BMP, text counts twice toward the 500 (UTF-16).
    expect(pattern.test('\u{1D400}')).to.equal(false);
    // And swagger-ui checks patterns without the `u` flag: the same answers there.
    const plain = new RegExp(schema.pattern);
    for (const text of ['machine learn', 'Ωmega', '日本', '42', '...', ' ', '—'])
      expect(plain.test(text), text).to.equal(pattern.test(text));
  });

  it('a free-text list value allowed by its items schema is never a 400; one refused always is', () => {
    for (const name of ['language', 'topic', 'provider', 'country', 'city']) {
      const items = schemaOf(name).items as Json & { pattern: string };
      expect(items, name).to.include({ type: 'string', minLength: 1, pattern: '^[^,\\u0000]+$' });
      const refuses = (value: string) => {
        try {
          parseListParameters({ [name]: value });
          return false;
        } catch {
          return true;
        }
      };
      const values = valuesOfPattern(items, 50, 3);
      expect(values.filter(refuses), name).to.deep.equal([]);
      // A comma splits (so `a,b` is two values, not a refusal); alone or doubled it leaves an empty one.
      for (const value of [',', '', '\u0000', 'a\u0000'])
        expect(new RegExp(items.pattern, 'u').test(value) && value.length >= 1, JSON.stringify(value)).to.equal(false);
      for (const value of [',', ',a', 'a,', '', 'a\u0000']) expect(refuses(value), `${name}=${value}`).to.equal(true);
    }
  });
});
