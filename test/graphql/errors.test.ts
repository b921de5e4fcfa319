// An unexpected failure inside a mutation is a generic INTERNAL_SERVER_ERROR that shows nothing of
// its cause, and the whole transaction (the change and its event) is rolled back.
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { graphql, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { GET_ONE, mutate, onlyError, PUBLISH } from '../support/graphql-documents.ts';

const SECRET = 'select secret_column from internal_table where password = $1';

describe('GraphQL unexpected errors', () => {
  const served = useTestApi(['catalog:write', 'graphql:read'], {
    fanOut: async () => {
      throw new Error(`relation "internal_table" does not exist: ${SECRET}`);
    },
  });

  before(async () => {
    // A fan-out that fails the way a broken dependency would, with internals in its message.
  });

  it('answers INTERNAL_SERVER_ERROR with a generic message and rolls the change and its event back', async () => {
    const input = buildLearningOpportunityInput();
    const draft = await mutate(served.api, served.key, 'upsert', input); // a draft emits no event: no fan-out
    const res = await graphql(served.api, served.key, PUBLISH, { id: input.id });
    const error = onlyError(res);
    expect(error.extensions?.code).to.equal('INTERNAL_SERVER_ERROR');
    expect(JSON.stringify(res.body)).not.to.match(/internal_table|secret_column|relation|select|stack/i);
    expect(res.body.data).to.equal(null);

    const read = await graphql<{ learningOpportunity: unknown }>(served.api, served.key, GET_ONE, { id: input.id });
    expect(read.body.data?.learningOpportunity, 'still the draft').to.deep.equal(draft);
    const { rows } = await testDb().pool.query<{ n: number }>(
      'select count(*)::int as n from event where resource_id = $1',
      [input.id],
    );
    expect(rows[0]!.n, 'no event stored').to.equal(0);
  });
});

describe('GraphQL errors quoting what was sent', () => {
  const served = useTestApi(['graphql:read']);

  it('never repeat a key sent where an enum value, a field, a string or an operation name was expected', async () => {
    const { key } = served;
    const name = key.replaceAll('-', '_'); // a key as a GraphQL name
    // Each with the error that quotes what was sent (so that the check below checks something).
    const bodies: [Record<string, unknown>, RegExp][] = [
      [{ query: `{ learningOpportunities(filter: { format: [${name}] }) { pagination { totalCount } } }` }, /enum/],
      [
        {
          query: 'query($f: [Format!]) { learningOpportunities(filter: { format: $f }) { pagination { totalCount } } }',
          variables: { f: [key] },
        },
        /Format/,
      ],
      [{ query: `{ ${name} }` }, /Cannot query field/],
      [
        { query: `{ learningOpportunities(filter: { format: ["${key}"] }) { pagination { totalCount } } }` },
        /non-enum/,
      ],
      [{ query: '{ __typename }', operationName: name }, /operation named/i],
    ];
    for (const [body, quoting] of bodies) {
      const res = await fetch(`${served.api.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      const what = String(body.query);
      expect(text, what).to.match(quoting);
      expect(text, what).to.include('[redacted]');
      expect(text, what).not.to.contain(name.slice(5, 25));
      expect(text, what).not.to.contain(key.slice(5, 25));
    }
  });
});
