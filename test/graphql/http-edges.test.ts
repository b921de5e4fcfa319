// /graphql checks the key and a GraphQL scope before it reads the body or Apollo parses anything,
// answers only POST with a JSON body, and every refusal carries a stable code: problem+json for
// HTTP-level ones, a GraphQL error for the rest. Suggestions, introspection and persisted queries
// leak nothing to a key without graphql:read.
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { getIntrospectionQuery } from 'graphql';
import type { Api } from '../../src/app/service.ts';
import { PERSISTED_QUERIES_REFUSED } from '../../src/graphql/errors.ts';
import { getJson, startTestApi, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { UPSERT } from '../support/graphql-documents.ts';
import { expectProblem } from '../support/problem.ts';

type Answer = {
  status: number;
  headers: Headers;
  text: string;
  body: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
};

describe('/graphql edges', () => {
  const served = useTestApi({
    reader: ['graphql:read'],
    writerOnly: ['catalog:write'],
    catalogReadOnly: ['catalog:read'],
    receiversOnly: ['receivers:manage'],
  });

  const post = async (
    key: string | null,
    body: string | Buffer,
    contentType: string | null = 'application/json',
  ): Promise<Answer> => {
    const headers: Record<string, string> = {};
    if (contentType) headers['content-type'] = contentType;
    if (key) headers.authorization = `Bearer ${key}`;
    const res = await fetch(`${served.api.url}/graphql`, {
      method: 'POST',
      headers,
      body: new Uint8Array(Buffer.from(body)),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: text ? (JSON.parse(text) as Answer['body']) : {} };
  };
  const code = (answer: Answer) => answer.body.errors?.[0]?.extensions?.code;

  it('answers GET and HEAD with a 405 problem naming POST, with or without a query', async () => {
    for (const path of ['/graphql', '/graphql?query=%7B__typename%7D']) {
      const get = await getJson(served.api, path, served.reader, { headers: { accept: 'text/html' } });
      expectProblem(get, 405);
      expect(get.headers.get('allow')).to.equal('POST');
      const head = await getJson(served.api, path, served.reader, { method: 'HEAD' });
      expect(head.status).to.equal(405);
      expect(head.headers.get('allow')).to.equal('POST');
    }
  });

  it('answers a body that is not JSON with a 415 problem, whatever its type', async () => {
    for (const [contentType, body] of [
      ['text/plain', '{"query":"{__typename}"}'],
      ['application/x-www-form-urlencoded', 'query=x'],
      ['multipart/form-data; boundary=x', '--x--'],
      [null, '{"query":"{__typename}"}'],
    ] as const) {
      const problem = expectProblem(await post(served.reader, body, contentType), 415);
      expect(problem.type, String(contentType)).to.equal('/problems/unsupported-media-type');
    }
  });

  it('tells a body that is not JSON from JSON that is no object, in a 400 problem naming the body', async () => {
    for (const [body, detail] of [
      ['{"query": ', 'The request body is not valid JSON'],
      ['"x"', 'The request body must be a JSON object'],
      ['null', 'The request body must be a JSON object'],
      ['1', 'The request body must be a JSON object'],
    ] as const) {
      const problem = expectProblem(await post(served.reader, body), 400);
      expect(problem.detail, body).to.equal(detail);
      expect(problem.invalidParams?.[0]?.name, body).to.equal('body');
    }
  });

  it('refuses a body that is not UTF-8 with a 400 problem naming the body, as REST a query string', async () => {
    const invalid = Buffer.concat([
      Buffer.from('{"query":"{ __typename }","variables":{"q":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}}'),
    ]);
    const problem = expectProblem(await post(served.reader, invalid), 400);
    expect(problem.detail).to.equal('The request body is not valid UTF-8');
    expect(problem.invalidParams).to.deep.equal([{ name: 'body', reason: 'is not valid UTF-8' }]);
    // Valid UTF-8 beyond ASCII is read as sent.
    const ok = await post(served.reader, '{"query":"{ __typename }","variables":{"q":"Zürich 東京 🎓"}}');
    expect(ok.status).to.equal(200);
  });

  it('names the Content-Encoding or charset it cannot read in its 415, instead of asking for the JSON it was sent', async () => {
    const send = async (headers: Record<string, string>) => {
      const res = await fetch(`${served.api.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${served.reader}`, 'content-type': 'application/json', ...headers },
        body: '{"query":"{__typename}"}',
      });
      return { status: res.status, headers: res.headers, text: await res.text() };
    };
    const encoding = expectProblem(await send({ 'content-encoding': 'x-foo' }), 415);
    expect(encoding.detail).to.equal(
      'Content-Encoding x-foo is not supported: send the body as is, or with gzip, deflate or br',
    );
    const charset = expectProblem(await send({ 'content-type': 'application/json; charset=latin1' }), 415);
    expect(charset.detail).to.equal('Charset latin1 is not supported: send the body as UTF-8');
  });

  it('answers an unauthenticated request with 401 UNAUTHENTICATED whatever its body', async () => {
    for (const [body, contentType] of [
      ['{"query": ', 'application/json'],
      ['not json at all', 'text/plain'],
      ['', null],
      ['x'.repeat(2 * 1024 * 1024), 'application/json'],
    ] as const) {
      const answer = await post(null, body, contentType);
      expect(answer.status, body.slice(0, 20)).to.equal(401);
      expect(answer.headers.get('www-authenticate')).to.match(/^Bearer\b/);
      expect(code(answer)).to.equal('UNAUTHENTICATED');
    }
  });

  it('refuses a key without a GraphQL scope before running anything, even {__typename}', async () => {
    for (const query of ['{ __typename }', '{ __schema { types { name } } }', '{ learningOpportunitie { id } }']) {
      const answer = await post(served.catalogReadOnly, JSON.stringify({ query }));
      expect(answer.status).to.equal(403);
      expect(code(answer)).to.equal('FORBIDDEN');
      expect(answer.body.data).to.equal(undefined);
      expect(answer.text).not.to.match(/Did you mean|__typename|Query/);
    }
  });

  it('lets any GraphQL scope in: catalog:write alone runs {__typename}', async () => {
    const answer = await post(served.writerOnly, JSON.stringify({ query: '{ __typename }' }));
    expect(answer.status).to.equal(200);
    expect(answer.body.data).to.deep.equal({ __typename: 'Query' });
  });

  it('suggests field names only to a caller holding graphql:read', async () => {
    const query = JSON.stringify({ query: '{ learningOpportunitie { id } }' });
    const withoutRead = await post(served.writerOnly, query);
    expect(code(withoutRead)).to.equal('GRAPHQL_VALIDATION_FAILED');
    expect(withoutRead.body.errors?.[0]?.message).to.equal(
      'Cannot query field "learningOpportunitie" on type "Query".',
    );
    const withRead = await post(served.reader, query);
    expect(code(withRead)).to.equal('GRAPHQL_VALIDATION_FAILED');
    expect(withRead.body.errors?.[0]?.message).to.match(/Did you mean "learningOpportunit/);
  });

  it('suggests nothing in the errors of a variable that does not fit its type, without graphql:read', async () => {
    const input = { ...buildLearningOpportunityInput(), format: 'ONLIN', titel: 'x' };
    const query = JSON.stringify({ query: UPSERT, variables: { input } });
    const withoutRead = await post(served.writerOnly, query);
    expect(withoutRead.status).to.equal(400);
    expect(code(withoutRead)).to.equal('BAD_USER_INPUT');
    expect(withoutRead.text).not.to.match(/Did you mean|"title"|ONLINE/);
    const withRead = await post(served.reader, query);
    expect(withRead.text).to.match(/Did you mean/);
  });

  it('lets only graphql:read introspect: a receivers:manage or catalog:write key gets 403 FORBIDDEN and no schema', async () => {
    const introspecting = [
      getIntrospectionQuery(),
      '{ __schema { types { name } } }',
      '{ __type(name: "Mutation") { fields { name } } }',
      // hidden in a fragment, beside a field the key may read
      'query { webhookReceivers { id } ...F } fragment F on Query { __schema { mutationType { fields { name } } } }',
    ];
    for (const key of [served.receiversOnly, served.writerOnly]) {
      for (const query of introspecting) {
        const answer = await post(key, JSON.stringify({ query }));
        expect(answer.status, query.slice(0, 40)).to.equal(403);
        expect(code(answer)).to.equal('FORBIDDEN');
        expect(answer.body.errors?.[0]?.message).to.match(/"graphql:read"/);
        expect(answer.body.data).to.equal(undefined);
        expect(answer.text).not.to.match(/LearningOpportunity|createWebhookReceiver/);
      }
    }
    // __typename (which clients add to every selection) is not introspection.
    const typename = await post(served.receiversOnly, JSON.stringify({ query: '{ __typename }' }));
    expect(typename.status).to.equal(200);
    expect(typename.body).to.deep.equal({ data: { __typename: 'Query' } });
    const read = await post(served.reader, JSON.stringify({ query: getIntrospectionQuery() }));
    expect(read.status).to.equal(200);
    expect(read.text).to.match(/"LearningOpportunity"/);
  });

  it('lets graphql:read introspect under NODE_ENV=production too (Apollo would switch introspection off there)', async () => {
    const previous = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    let production: Api;
    try {
      production = await startTestApi();
    } finally {
      // Assigned undefined, process.env holds the text "undefined" (and every child process after it).
      if (previous === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = previous;
    }
    try {
      const res = await fetch(`${production.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${served.reader}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ __schema { queryType { name } } }' }),
      });
      expect(res.status).to.equal(200);
      expect(await res.json()).to.deep.equal({ data: { __schema: { queryType: { name: 'Query' } } } });
    } finally {
      await production.close();
    }
  });

  it('keeps no persisted queries: registering and a hash mismatch are PERSISTED_QUERY_NOT_SUPPORTED', async () => {
    const query = '{ __typename }';
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    for (const body of [
      { query, extensions: { persistedQuery: { version: 1, sha256Hash } } },
      { query, extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } },
      { extensions: { persistedQuery: { version: 1, sha256Hash } } },
    ]) {
      const answer = await post(served.reader, JSON.stringify(body));
      expect(code(answer), JSON.stringify(body)).to.equal('PERSISTED_QUERY_NOT_SUPPORTED');
      expect(answer.body.data).to.equal(undefined);
      // Apollo's status for it (a persisted-query client falls back on it), and a sentence (it was "PersistedQueryNotSupported").
      expect(answer.status).to.equal(200);
      expect(answer.body.errors?.[0]?.message).to.equal(PERSISTED_QUERIES_REFUSED);
    }
  });

  it('answers malformed GraphQL requests with 400 and a stable code, never INTERNAL_SERVER_ERROR', async () => {
    const cases: [string, string][] = [
      ['[]', 'BAD_REQUEST'],
      ['{}', 'BAD_REQUEST'],
      ['{"query": 5}', 'BAD_REQUEST'],
      ['{"query": "{ x"}', 'GRAPHQL_PARSE_FAILED'],
      ['{"query": "{ nope }"}', 'GRAPHQL_VALIDATION_FAILED'],
      ['{"query": "subscription { x }"}', 'GRAPHQL_VALIDATION_FAILED'],
      ['{"query": "query A { __typename } query B { __typename }"}', 'OPERATION_RESOLUTION_FAILURE'],
    ];
    for (const [body, expected] of cases) {
      const answer = await post(served.reader, body);
      expect(answer.status, body).to.equal(400);
      expect(answer.headers.get('content-type')).to.match(/^application\/json/);
      expect(code(answer), body).to.equal(expected);
    }
  });
});
