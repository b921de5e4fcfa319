// Schemathesis-style conformance: requests generated from schema/openapi.json itself (every
// operation; each parameter valid and invalid by its own schema; every way of sending a key; methods
// the path lacks) against a real service, and every response validated against the document:
// status listed, content type, body schema, declared headers. A value the document allows must not
// be refused with 400 (nor fail with a 500); a value it forbids must be refused with a 4xx. Every
// parameter with a `pattern` (the timestamps, `q`, the list values, the id) gets values generated
// from that pattern (pattern-values.ts): its least and greatest choices and random ones, and near
// misses one edit away from them.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { createTestKey, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { loadOpenApiDocument, type ObservedResponse, OpenApiValidator } from './openapi-validator.ts';
import {
  collectLinks,
  invalidValues,
  type LinkedValues,
  type Operation,
  operations,
  target,
  validValues,
} from './request-generator.ts';

const doc = loadOpenApiDocument();
const validator = new OpenApiValidator(doc);
const UNDOCUMENTED_METHODS = ['POST', 'PUT', 'DELETE', 'PATCH'];

type Sent = { op: Operation; values: Record<string, string>; headers?: Record<string, string>; method?: string };

describe('OpenAPI conformance of generated requests (every operation, every parameter)', () => {
  const served = useTestApi(['catalog:read']);
  const linked: LinkedValues = new Map();
  const all = operations(doc);

  async function send(s: Sent): Promise<ObservedResponse & { body: unknown }> {
    const headers = new Headers(s.headers);
    for (const p of s.op.parameters)
      if (p.in === 'header' && s.values[p.name] !== undefined) headers.set(p.name, s.values[p.name]!);
    const path = target(s.op, s.values);
    const method = s.method ?? s.op.method;
    const res = await fetch(`${served.api.url}${path}`, { method, headers });
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { method, path, status: res.status, headers: res.headers, text, body };
  }

  /** Values for the required parameters, so that the one under test is the only thing that varies. */
  function requiredValues(op: Operation): Record<string, string> {
    const values: Record<string, string> = {};
    for (const p of op.parameters.filter((q) => q.required))
      values[p.name] = validValues(p, linked, op.template)?.[0] ?? '';
    return values;
  }

  before(async () => {
    for (let i = 0; i < 3; i++) await createRecord(served.api.writes);
    // First a plain request to every operation, as a stateful tester would: its responses' links
    // supply the values only the service can make (feed cursors).
    for (const op of all.filter((o) => o.method === 'GET')) {
      const res = await send({ op, values: requiredValues(op), headers: { authorization: `Bearer ${served.key}` } });
      collectLinks(doc, op, res.status, res.body, linked);
    }
  });

  for (const op of all) {
    it(`${op.method} ${op.template}`, async function () {
      // Hundreds of requests for the list (each pattern gives dozens of values): a minute on a loaded machine.
      this.timeout(180_000);
      const problems: string[] = [];
      const auth = { authorization: `Bearer ${served.key}` };
      const check = (res: ObservedResponse, why: string) =>
        problems.push(...validator.check(res).map((p) => `${p} (${why})`));

      check(await send({ op, values: requiredValues(op), headers: auth }), 'required parameters only');

      for (const p of op.parameters) {
        const valid = validValues(p, linked, op.template);
        if (valid === null || valid.length === 0) {
          problems.push(
            `${op.method} ${op.template}: cannot make a valid ${p.name} from its schema or from a link of the document`,
          );
          continue;
        }
        for (const value of valid) {
          const res = await send({ op, values: { ...requiredValues(op), [p.name]: value }, headers: auth });
          check(res, `valid ${p.name}=${JSON.stringify(value.slice(0, 40))}`);
          // A 503 (the read ran out of time on a loaded machine) says "try again", not "you are wrong".
          if (res.status === 400 || res.status === 500)
            problems.push(
              `${res.method} ${res.path}: ${p.name}=${JSON.stringify(value.slice(0, 40))} conforms to the document but was answered ${res.status}: ${res.text.slice(0, 200)}`,
            );
        }
        for (const value of invalidValues(p)) {
          const res = await send({ op, values: { ...requiredValues(op), [p.name]: value }, headers: auth });
          check(res, `invalid ${p.name}=${JSON.stringify(value.slice(0, 40))}`);
          if (res.status < 400 || res.status > 499)
            problems.push(
              `${res.method} ${res.path}: ${p.name}=${JSON.stringify(value.slice(0, 40))} violates the document but was accepted (${res.status})`,
            );
        }
      }

      const limited = await createTestKey(['catalog:read'], testDb(), 1);
      const keys: Record<string, Record<string, string>> = {
        'no key': {},
        'another scheme': { authorization: 'Basic YTpi' },
        'unknown key': { authorization: `Bearer lods_${randomBytes(32).toString('base64url')}` },
        'key without catalog:read': { authorization: `Bearer ${await createTestKey(['graphql:read'])}` },
        'key over its rate limit': { authorization: `Bearer ${limited}` },
      };
      for (const [why, headers] of Object.entries(keys)) {
        // Twice: the second request of the rate-limited key is over its limit even across a window's end.
        for (let i = 0; i < 2; i++) check(await send({ op, values: requiredValues(op), headers }), why);
      }
      for (const method of UNDOCUMENTED_METHODS)
        check(await send({ op, values: requiredValues(op), headers: auth, method }), `method ${method}`);

      expect([...new Set(problems)], [...new Set(problems)].join('\n')).to.deep.equal([]);
    });
  }
});
