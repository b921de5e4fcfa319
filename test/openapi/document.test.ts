// The OpenAPI document against the code: it resolves, it lists exactly what /v1 serves, its record
// schema has exactly the renderer's fields, and its limits and problem types are the code's.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { renderRecord, type LearningOpportunityRecord } from '../../src/catalog/record.ts';
import { ERROR_CODES } from '../../src/kernel/errors.ts';
import { PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX } from '../../src/kernel/paging.ts';
import { FEED_WAIT_MAX_SECONDS } from '../../src/feed/feed-query.ts';
import { FEED_LIMIT_DEFAULT, FEED_LIMIT_MAX } from '../../src/feed/feed-reads.ts';
import { problemType } from '../../src/http/problem.ts';
import { V1_ROUTES } from '../../src/http/v1/routes.ts';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import {
  atPointer,
  deref,
  HTTP_METHODS,
  type Json,
  loadOpenApiDocument,
  OpenApiValidator,
} from './openapi-validator.ts';

const doc = loadOpenApiDocument();
const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
  HTTP_METHODS.filter((m) => m in item).map((method) => ({
    path,
    method,
    op: item[method] as Json & { responses: Json },
  })),
);

/** Every `$ref` value in the document, with where it sits. */
function refs(node: unknown, at = '#'): { at: string; ref: string }[] {
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([k, v]) =>
    k === '$ref' && typeof v === 'string' ? [{ at, ref: v }] : refs(v, `${at}/${k}`),
  );
}

/** The object schema behind a property schema: through $ref, allOf and the non-null branch of anyOf. */
function objectSchema(schema: Json): Json | undefined {
  let node = schema;
  for (let i = 0; i < 10; i++) {
    if (typeof node.$ref === 'string') node = deref(doc, node.$ref).node;
    else if (Array.isArray(node.anyOf)) node = (node.anyOf as Json[]).find((s) => s.type !== 'null')!;
    else if (Array.isArray(node.allOf) && !node.properties) node = (node.allOf as Json[])[0]!;
    else break;
  }
  if (node.type === 'array') return objectSchema(node.items as Json);
  return node.properties ? node : undefined;
}

/** Differences between the keys of a rendered value and those its schema declares, at every depth. */
function keyDrift(value: unknown, schema: Json, at: string): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => keyDrift(v, schema, `${at}[${i}]`));
  const object = objectSchema(schema);
  if (value === null || typeof value !== 'object' || !object) return [];
  const declared = Object.keys(object.properties as Json).sort();
  const rendered = Object.keys(value).sort();
  const drift: string[] = [];
  if (declared.join() !== rendered.join())
    drift.push(`${at}: rendered [${rendered.join(', ')}], documented [${declared.join(', ')}]`);
  if ([...((object.required as string[]) ?? [])].sort().join() !== declared.join())
    drift.push(`${at}: not every documented property is required`);
  if (object.additionalProperties !== false) drift.push(`${at}: additionalProperties is not false`);
  for (const key of rendered) {
    const propertySchema = (object.properties as Record<string, Json>)[key];
    if (propertySchema) drift.push(...keyDrift((value as Json)[key], propertySchema, `${at}.${key}`));
  }
  return drift;
}

const date = (s: string) => new Date(s);
const fullRecord = (): LearningOpportunityRecord => ({
  id: randomUUID(),
  title: 'T',
  summary: 's',
  description: 'd',
  url: 'https://example.org/x',
  provider: { name: 'P', url: 'https://example.org' },
  format: 'ONLINE',
  language: 'en',
  topics: ['a'],
  price: { amount: '10.00', currency: 'EUR' },
  status: 'PUBLISHED',
  publishedAt: date('2026-01-01T00:00:00Z'),
  createdAt: date('2026-01-01T00:00:00Z'),
  updatedAt: date('2026-01-02T00:00:00.123Z'),
  sessions: [
    {
      id: randomUUID(),
      startsAt: date('2027-01-01T09:00:00Z'),
      endsAt: date('2027-01-01T17:00:00Z'),
      timezone: 'UTC',
      format: 'IN_PERSON',
      location: { name: 'n', address: 'a', city: 'c', country: 'DE' },
      capacity: 3,
    },
  ],
  deadlines: [{ id: randomUUID(), type: 'PAYMENT', dueAt: date('2026-12-01T00:00:00Z'), description: 'd' }],
  faqs: [{ id: randomUUID(), question: 'q', answer: 'a' }],
  externalReviews: [
    {
      id: randomUUID(),
      source: 's',
      url: 'https://example.org/r',
      rating: 4,
      maxRating: 5,
      reviewCount: 9,
      excerpt: 'e',
      reviewedAt: date('2026-02-01T00:00:00Z'),
    },
  ],
  accolades: [
    {
      id: randomUUID(),
      title: 't',
      issuer: 'i',
      awardedAt: date('2026-03-01T00:00:00Z'),
      url: 'https://example.org/a',
    },
  ],
});

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 whose every $ref resolves and whose every schema compiles in strict mode', () => {
    expect(doc.openapi).to.equal('3.1.0');
    for (const { at, ref } of refs(doc)) expect(() => atPointer(doc, ref), `${at} -> ${ref}`).not.to.throw();
    const validator = new OpenApiValidator(doc);
    for (const name of Object.keys(doc.components.schemas!))
      expect(() => validator.schemaAt(`#/components/schemas/${name}`), name).not.to.throw();
    const ids = operations.map((o) => o.op.operationId);
    expect(new Set(ids).size, 'unique operationIds').to.equal(ids.length);
    expect(doc.components.securitySchemes).to.deep.equal({
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        description: (doc.components.securitySchemes!.bearerAuth as Json).description,
      },
    });
  });

  it('lists exactly the routes /v1 serves, GET with HEAD', () => {
    // The dispatcher's one table of routes (src/http/v1/routes.ts).
    const served = Object.entries(V1_ROUTES).map(([path, r]) => ({
      path: path.slice('/v1'.length),
      methods: r.methods,
    }));
    const documented = operations.map((o) => `${o.method.toUpperCase()} ${o.path}`).sort();
    const expected = served.flatMap((r) => r.methods.map((m) => `${m} /v1${r.path.replace(/:(\w+)/g, '{$1}')}`)).sort();
    expect(documented).to.deep.equal(expected);
  });

  it('has every documented path and method served: each answers a documented 2xx with a key (or without, where security is empty)', async () => {
    let api: Api | undefined;
    try {
      api = await startTestApi();
      const key = await createTestKey(['catalog:read']);
      const record = await createRecord(api.writes);
      for (const { path, method, op } of operations) {
        const concrete = path.replace('{id}', record.id);
        const needsKey = !(Array.isArray(op.security) && op.security.length === 0);
        const res = await getJson(api, concrete, needsKey ? key : null, { method: method.toUpperCase() });
        const documented2xx = Object.keys(op.responses).filter((s) => s.startsWith('2'));
        expect(documented2xx, `${method} ${path}`).to.include(String(res.status));
      }
    } finally {
      await api?.close();
    }
  });

  it('describes the record with exactly the fields the renderer outputs, nested ones included', () => {
    const record = JSON.parse(renderRecord(fullRecord())) as Json;
    const schema = { $ref: '#/components/schemas/LearningOpportunity' };
    const drift = keyDrift(record, schema, 'record');
    expect(drift, drift.join('\n')).to.deep.equal([]);
    const validator = new OpenApiValidator(doc);
    const validate = validator.schemaAt('#/components/schemas/LearningOpportunity');
    expect(validate(record), JSON.stringify(validate.errors)).to.equal(true);
    expect(validate(JSON.parse(renderRecord({ ...fullRecord(), status: 'ARCHIVED' })))).to.equal(true);
    // Drafts are never public: the schema refuses them (status and a null publishedAt).
    expect(validate(JSON.parse(renderRecord({ ...fullRecord(), status: 'DRAFT', publishedAt: null })))).to.equal(false);
  });

  it('describes a `fields` projection with every member of the record, each as the record has it', () => {
    const schemas = (doc.components as Json).schemas as Record<string, Json>;
    const members = Object.keys(schemas.LearningOpportunity!.properties as Json);
    const projected = schemas.LearningOpportunityProjection!.properties as Record<string, Json>;
    expect(Object.keys(projected)).to.deep.equal(members);
    for (const name of members)
      expect(projected[name]).to.deep.equal({ $ref: `#/components/schemas/LearningOpportunity/properties/${name}` });
  });

  it('states the paging limits of the code', () => {
    const limit = deref(doc, '#/components/parameters/limit').node.schema as Json;
    const offset = deref(doc, '#/components/parameters/offset').node.schema as Json;
    expect(limit).to.include({ type: 'integer', minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT });
    const feedLimit = deref(doc, '#/components/parameters/feedLimit').node.schema as Json;
    expect(feedLimit).to.include({ type: 'integer', minimum: 1, maximum: FEED_LIMIT_MAX, default: FEED_LIMIT_DEFAULT });
    const wait = deref(doc, '#/components/parameters/wait').node.schema as Json;
    expect(wait).to.include({ type: 'integer', minimum: 0, maximum: FEED_WAIT_MAX_SECONDS, default: 0 });
    expect(offset).to.include({ type: 'integer', minimum: 0, default: 0 });
    const pagination = deref(doc, '#/components/schemas/Pagination').node.properties as Record<string, Json>;
    expect(pagination.limit).to.include({ minimum: 1, maximum: PAGE_LIMIT_MAX });
  });

  it('gives each problem response the type URI that src/kernel/errors.ts gives its status', () => {
    const responses = doc.components.responses as Record<string, Json>;
    const statuses: number[] = [];
    for (const [name, response] of Object.entries(responses)) {
      const schema = (response.content as Record<string, Json>)['application/problem+json']!.schema as Json;
      const narrowed = (schema.allOf as Json[])[1]!.properties as Record<string, { const: unknown }>;
      const status = narrowed.status!.const as number;
      const code = (Object.keys(ERROR_CODES) as (keyof typeof ERROR_CODES)[]).find(
        (c) => ERROR_CODES[c].status === status,
      );
      expect(code, `${name}: status ${status} has an error code`).to.be.a('string');
      expect(narrowed.type!.const, name).to.equal(problemType(code!));
      statuses.push(status);
    }
    // Every status /v1 can answer with a problem is documented.
    expect(statuses.sort()).to.deep.equal([400, 401, 403, 404, 405, 408, 410, 417, 429, 431, 500, 503]);
  });

  it('lists 408, 417 and 431 on every operation: the HTTP server answers them on every path, before any route', () => {
    const missing = operations.flatMap(({ path, method, op }) =>
      ['408', '417', '431']
        .filter((status) => !(status in op.responses))
        .map((status) => `${method} ${path}: ${status}`),
    );
    expect(missing).to.deep.equal([]);
    for (const { method, op } of operations.filter((o) => o.method === 'get')) {
      expect(op.responses['408'], method).to.deep.equal({ $ref: '#/components/responses/RequestTimeout' });
      expect(op.responses['417'], method).to.deep.equal({ $ref: '#/components/responses/ExpectationFailed' });
      expect(op.responses['431'], method).to.deep.equal({ $ref: '#/components/responses/RequestHeaderFieldsTooLarge' });
    }
  });

  it('is served at GET /v1/openapi.json without a key, as stored, while the other /v1 paths still need one', async () => {
    let api: Api | undefined;
    try {
      api = await startTestApi();
      const res = await getJson(api, '/v1/openapi.json', null);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(res.body).to.deep.equal(doc);
      expect((await getJson(api, '/v1/learning-opportunities', null)).status).to.equal(401);
      expect((await getJson(api, `/v1/learning-opportunities/${randomUUID()}`, null)).status).to.equal(401);
    } finally {
      await api?.close();
    }
  });
});
