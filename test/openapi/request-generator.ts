// Schemathesis-style request generation from schema/openapi.json: for every operation, requests
// with each parameter set to values its own schema allows (positive) and to values it forbids
// (negative). A parameter with a `pattern` gets strings generated from the pattern itself
// (pattern-values.ts), the least and greatest of every choice among them, and near misses of those.
// Values of a format the generator cannot fabricate (the feed cursor) come from the document's
// response `links`, as a stateful tester would take them from earlier responses.
import { randomUUID } from 'node:crypto';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { deref, HTTP_METHODS, type Json, type OpenApiDoc } from './openapi-validator.ts';
import { nearMisses, type PatternSchema, valuesOfPattern } from './pattern-values.ts';

export type Parameter = { name: string; in: 'query' | 'path' | 'header'; required: boolean; schema: Json };
export type Operation = {
  template: string;
  method: string;
  operationId: string;
  parameters: Parameter[];
  secured: boolean;
  responses: Json;
};
/** Valid values of a parameter that only the service can make, gathered from links: "template name" -> values. */
export type LinkedValues = Map<string, string[]>;

/** Formats whose values the generator can make itself (ajv-formats knows the rest for validation only). */
const KNOWN_FORMATS = new Set(['uuid', 'date-time']);

/**
 * Enum values that need another parameter, which a schema cannot say (the document's description
 * does): sent alone they are a 400 by design. The list test covers them with their partner.
 */
const NEEDS_ANOTHER_PARAMETER = new Set(['sort=relevance']);

/** How many values a pattern gives a parameter (valid ones; about as many near misses). */
const PATTERN_VALUES = 16;

/** A seed per parameter, so that a failure replays with the same values. */
const seedOf = (name: string): number =>
  [...name].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619), 2166136261);

const hasPattern = (s: Json): s is Json & PatternSchema => typeof s.pattern === 'string';

/**
 * The grammar of the `date-time` format (RFC 3339 section 5.6, `T` or `t`, any fraction): what a
 * tester generates for a `date-time` without a pattern. ajv-formats then keeps the real instants
 * (days of the month, leap seconds only at 23:59:60 UTC), as its validation of the format does.
 */
const RFC3339_DATE_TIME =
  '^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]{1,9})?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$';
const DATE_TIME = fullFormats['date-time'] as { validate: (value: string) => boolean };
const formatAllows = (s: Json, value: string): boolean => s.format !== 'date-time' || DATE_TIME.validate(value);

/** True when the string `value` is one the (string) schema allows by its pattern and lengths. */
const allowedByPattern = (s: PatternSchema, value: string): boolean =>
  new RegExp(s.pattern, 'u').test(value) &&
  value.length >= (s.minLength ?? 0) &&
  value.length <= (s.maxLength ?? Infinity);

/** A list parameter's item schema (style form, explode false: comma-separated in one value). */
const itemsOf = (doc: OpenApiDoc | null, s: Json): Json | null => {
  const items = s.items as Json | undefined;
  if (!items) return null;
  return typeof items.$ref === 'string' && doc ? deref(doc, items.$ref).node : items;
};

function resolveSchema(doc: OpenApiDoc, schema: Json): Json {
  const node = typeof schema.$ref === 'string' ? deref(doc, schema.$ref).node : schema;
  // Array items resolved here, so that the generators need no document.
  const items = itemsOf(doc, node);
  return items ? { ...node, items } : node;
}

export function operations(doc: OpenApiDoc): Operation[] {
  const globalSecurity = (doc.security as unknown[] | undefined) ?? [];
  return Object.entries(doc.paths).flatMap(([template, item]) =>
    HTTP_METHODS.filter((method) => method in item).map((method) => {
      const op = item[method] as Json;
      const raw = [...((item.parameters as Json[]) ?? []), ...((op.parameters as Json[]) ?? [])];
      const parameters = raw.map((p) => {
        const node = typeof p.$ref === 'string' ? deref(doc, p.$ref).node : p;
        return {
          name: node.name,
          in: node.in,
          required: node.required === true,
          schema: resolveSchema(doc, node.schema as Json),
        } as Parameter;
      });
      const security = (op.security as unknown[] | undefined) ?? globalSecurity;
      return {
        template,
        method: method.toUpperCase(),
        operationId: String(op.operationId),
        parameters,
        secured: security.length > 0,
        responses: op.responses as Json,
      };
    }),
  );
}

/** Values the parameter's schema allows; null when the generator cannot make them itself. */
export function validValues(p: Parameter, linked: LinkedValues, template: string): string[] | null {
  const s = p.schema;
  if (typeof s.format === 'string' && !KNOWN_FORMATS.has(s.format)) return linked.get(`${template} ${p.name}`) ?? [];
  // The document's own examples are valid values too (a generator's first source, as Schemathesis's).
  const examples = Array.isArray(s.examples) ? (s.examples as unknown[]).map(String) : [];
  const generated = generate(p);
  return generated === null ? (examples.length ? examples : null) : [...new Set([...examples, ...generated])];
}

/** Values made from the parameter's schema alone (pattern, format, enum, items, bounds). */
function generate(p: Parameter): string[] | null {
  const s = p.schema;
  // A pattern and a format both hold: values of the pattern that the format allows too.
  if (hasPattern(s)) return valuesOfPattern(s, PATTERN_VALUES, seedOf(p.name)).filter((v) => formatAllows(s, v));
  if (s.format === 'date-time')
    return valuesOfPattern({ pattern: RFC3339_DATE_TIME }, PATTERN_VALUES, seedOf(p.name)).filter((v) =>
      formatAllows(s, v),
    );
  if (Array.isArray(s.enum))
    return (s.enum as unknown[]).map(String).filter((v) => !NEEDS_ANOTHER_PARAMETER.has(`${p.name}=${v}`));
  if (s.type === 'array') {
    const items = itemsOf(null, s) ?? {};
    const pool = Array.isArray(items.enum)
      ? (items.enum as unknown[]).map(String)
      : hasPattern(items)
        ? valuesOfPattern(items, PATTERN_VALUES / 2, seedOf(p.name))
        : ['x', 'Berlin', ',', '#!$%&()'];
    const maxItems = (s.maxItems as number | undefined) ?? pool.length;
    // One value, two, and (within maxItems) every value of the pool in one parameter.
    return [...new Set([pool[0]!, pool.slice(0, 2).join(','), pool.slice(0, maxItems).join(',')])];
  }
  if (s.type === 'integer') {
    const min = (s.minimum as number | undefined) ?? 0;
    const max = (s.maximum as number | undefined) ?? min + 1000;
    return [...new Set([min, max, Math.floor((min + max) / 2), (s.default as number | undefined) ?? min])].map(String);
  }
  if (s.format === 'uuid') return [randomUUID(), randomUUID().toUpperCase()];
  if (s.type === 'string') {
    const values = ['x', 'with space', '*', '"0123"', 'W/"weak"', '#!$%&()', 'y'.repeat(300)];
    return values.filter(
      (v) =>
        v.length >= ((s.minLength as number | undefined) ?? 0) &&
        v.length <= ((s.maxLength as number | undefined) ?? Infinity),
    );
  }
  return null;
}

/** Values the parameter's schema forbids (empty when every string it can carry is allowed). */
export function invalidValues(p: Parameter): string[] {
  const s = p.schema;
  if (s.type === 'integer') {
    const out = ['abc', '1.5', '', '1e2'];
    if (typeof s.minimum === 'number') out.push(String(s.minimum - 1));
    if (typeof s.maximum === 'number') out.push(String(s.maximum + 1));
    return out;
  }
  const out: string[] = [];
  if (s.format === 'date-time') out.push('not-a-date', '2026-02-30T25:00:00Z');
  if (Array.isArray(s.enum)) out.push('not-one-of-them');
  if (s.type === 'array') {
    const items = itemsOf(null, s) ?? {};
    if (Array.isArray(items.enum)) out.push('not-one-of-them');
    if (typeof s.maxItems === 'number') out.push(Array.from({ length: s.maxItems + 1 }, (_, i) => `v${i}`).join(','));
    if (items.minLength === 1) out.push('a,,b');
  }
  if (hasPattern(s) || s.format === 'uuid') out.push('not valid!', 'x'.repeat(300));
  // An unknown format is a value only the service makes: anything well-formed but made up is invalid.
  if (typeof s.format === 'string' && !KNOWN_FORMATS.has(s.format)) out.push('AAAA', 'djEu');
  if (p.in === 'query' && (hasPattern(s) || s.format !== undefined)) out.push('');
  if (hasPattern(s) && (typeof s.format !== 'string' || KNOWN_FORMATS.has(s.format))) {
    const seed = seedOf(p.name);
    out.push(...nearMisses(s, valuesOfPattern(s, PATTERN_VALUES, seed), PATTERN_VALUES, seed));
  }
  // Only what the schema really forbids (`not valid!` is a fine search text).
  return [...new Set(hasPattern(s) ? out.filter((v) => !allowedByPattern(s, v)) : out)];
}

/** The request target for an operation with the given parameter values (query and path ones). */
export function target(op: Operation, values: Record<string, string>): string {
  let path = op.template;
  const query = new URLSearchParams();
  for (const p of op.parameters) {
    const value = values[p.name];
    if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(value ?? ''));
    else if (p.in === 'query' && value !== undefined) query.append(p.name, value);
  }
  const qs = query.toString();
  return qs ? `${path}?${qs}` : path;
}

/** Follows `$response.body#/a/b` link expressions of a response over its JSON body, filling `linked`. */
export function collectLinks(
  doc: OpenApiDoc,
  op: Operation,
  status: number,
  body: unknown,
  linked: LinkedValues,
): void {
  const response = op.responses[String(status)] as Json | undefined;
  if (!response) return;
  const links = ((typeof response.$ref === 'string' ? deref(doc, response.$ref).node : response).links ?? {}) as Record<
    string,
    Json
  >;
  for (const link of Object.values(links)) {
    const targetOp = operations(doc).filter((o) => o.operationId === link.operationId);
    for (const [name, expression] of Object.entries((link.parameters ?? {}) as Record<string, string>)) {
      const pointer = /^\$response\.body#(\/.*)$/.exec(expression)?.[1];
      if (!pointer) continue;
      let value: unknown = body;
      for (const key of pointer.slice(1).split('/'))
        value = value === null || typeof value !== 'object' ? undefined : (value as Json)[key];
      if (typeof value !== 'string') continue;
      for (const o of targetOp) {
        const key = `${o.template} ${name}`;
        linked.set(key, [...new Set([...(linked.get(key) ?? []), value])]);
      }
    }
  }
}
