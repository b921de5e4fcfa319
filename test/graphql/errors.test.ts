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
    const bodies = [
      { query: `{ learningOpportunities(filter: { format: [${name}] }) { totalCount } }` },
      {
        query: 'query($f: [Format!]) { learningOpportunities(filter: { format: $f }) { totalCount } }',
        variables: { f: [key] },
      },
      { query: `{ ${name} }` },
      { query: `{ learningOpportunity(id: "${key}) { id } }` },
      { query: '{ __typename }', operationName: name },
    ];
    for (const body of bodies) {
      const res = await fetch(`${served.api.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      expect(text, body.query).to.include('errors');
      expect(text, body.query).not.to.contain(name.slice(5, 25));
      expect(text, body.query).not.to.contain(key.slice(5, 25));
    }
  });
});
