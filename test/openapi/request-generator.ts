// Schemathesis-style request generation from schema/openapi.json: for every operation, requests
// with each parameter set to values its own schema allows (positive) and to values it forbids
// (negative). Values of a format the generator cannot fabricate (the feed cursor) come from the
// document's response `links`, as a stateful tester would take them from earlier responses.
import { randomUUID } from 'node:crypto';
import { deref, HTTP_METHODS, type Json, type OpenApiDoc } from './openapi-validator.ts';

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

/** A string matching a pattern of the simple form ^[class]{m,n}$ (or null when the pattern is not of that form). */
function fromCharClassPattern(pattern: string, length: number): string | null {
  const match = /^\^\[([^\]]+)\]\{(\d+),(\d+)\}\$$/.exec(pattern);
  if (!match) return null;
  const chars: string[] = [];
  for (let i = 0; i < match[1]!.length; i++) {
    const c = match[1]![i]!;
    if (match[1]![i + 1] === '-' && i + 2 < match[1]!.length) {
      for (let code = c.charCodeAt(0); code <= match[1]!.charCodeAt(i + 2); code++)
        chars.push(String.fromCharCode(code));
      i += 2;
    } else if (c !== '\\') chars.push(c);
  }
  const n = Math.min(Math.max(length, Number(match[2])), Number(match[3]));
  return Array.from({ length: n }, (_, i) => chars[(i * 7) % chars.length]).join('');
}

/** Values the parameter's schema allows; null when the generator cannot make them itself. */
export function validValues(p: Parameter, linked: LinkedValues, template: string): string[] | null {
  const s = p.schema;
  if (typeof s.format === 'string' && !KNOWN_FORMATS.has(s.format)) return linked.get(`${template} ${p.name}`) ?? [];
  // The document's own examples are valid values (a generator's first source, as Schemathesis's).
  if (Array.isArray(s.examples) && s.examples.length) return (s.examples as unknown[]).map(String);
  if (s.format === 'date-time') return ['2026-03-01T09:00:00.000Z', '2026-03-01T09:00:00Z'];
  if (Array.isArray(s.enum))
    return (s.enum as unknown[]).map(String).filter((v) => !NEEDS_ANOTHER_PARAMETER.has(`${p.name}=${v}`));
  if (s.type === 'array') {
    const items = itemsOf(null, s) ?? {};
    const pool = Array.isArray(items.enum) ? (items.enum as unknown[]).map(String) : ['x', 'Berlin'];
    return [pool[0]!, pool.slice(0, 2).join(',')];
  }
  if (s.type === 'integer') {
    const min = (s.minimum as number | undefined) ?? 0;
    const max = (s.maximum as number | undefined) ?? min + 1000;
    return [...new Set([min, max, Math.floor((min + max) / 2), (s.default as number | undefined) ?? min])].map(String);
  }
  if (s.format === 'uuid') return [randomUUID(), randomUUID().toUpperCase()];
  if (typeof s.pattern === 'string') {
    const values = [1, 8, 64, 200].map((n) => fromCharClassPattern(s.pattern as string, n));
    return values.includes(null) ? null : [...new Set(values as string[])];
  }
  if (s.type === 'string') return ['x', 'with space', '*', '"0123"', 'W/"weak"', '#!$%&()', 'y'.repeat(300)];
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
  if (typeof s.pattern === 'string' || s.format === 'uuid') out.push('not valid!', 'x'.repeat(300));
  // An unknown format is a value only the service makes: anything well-formed but made up is invalid.
  if (typeof s.format === 'string' && !KNOWN_FORMATS.has(s.format)) out.push('AAAA', 'djEu');
  if (p.in === 'query' && (typeof s.pattern === 'string' || s.format !== undefined)) out.push('');
  return out;
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
