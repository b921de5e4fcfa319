// events(after, limit) over GraphQL: the same events, bodies and cursors as GET /v1/events.
import { expect } from 'chai';
import { createTestKey, graphql, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { onlyError } from '../support/graphql-documents.ts';
import { collect, feed, head } from './feed-support.ts';

const EVENTS = `query ($after: String, $limit: Int) {
  events(after: $after, limit: $limit) { results { id type occurredAt resourceId body } pagination { limit after next hasMore } }
}`;
type EventsData = {
  events: {
    results: { id: string; type: string; occurredAt: string; resourceId: string; body: string }[];
    pagination: { limit: number; after: string | null; next: string; hasMore: boolean };
  };
};

describe('GraphQL events(after, limit)', () => {
  const served = useTestApi(['graphql:read', 'catalog:read']);

  it('reads the same page as REST: events, exact bodies, cursors', async () => {
    const start = await head(served.api, served.key);
    const a = await createRecord(served.api.writes);
    const b = await createRecord(served.api.writes);
    await collect(served.api, served.key, start, 2);
    const res = await graphql<EventsData>(served.api, served.key, EVENTS, { after: start, limit: 1 });
    expect(res.body.errors).to.equal(undefined);
    const rest = await feed(served.api, served.key, { after: start, limit: 1 });
    const page = res.body.data!.events;
    expect(page.pagination).to.deep.equal(rest.pagination);
    expect(page.results.map((e) => e.resourceId)).to.deep.equal([a.id]);
    expect(rest.text).to.contain(`"results":[${page.results[0]!.body}]`);
    expect(page.results[0]).to.deep.include({
      id: rest.results[0]!.id,
      type: 'LEARNING_OPPORTUNITY_PUBLISHED',
      occurredAt: rest.results[0]!.occurredAt,
    });
    const next = await graphql<EventsData>(served.api, served.key, EVENTS, { after: page.pagination.next });
    expect(next.body.data!.events.results.map((e) => e.resourceId)).to.deep.equal([b.id]);
    expect(next.body.data!.events.pagination.hasMore).to.equal(false);
  });

  it('names a bad argument, and needs graphql:read', async () => {
    const bad = onlyError(await graphql(served.api, served.key, EVENTS, { after: 'nope', limit: 1001 }));
    expect(bad.extensions?.code).to.equal('BAD_USER_INPUT');
    expect(bad.extensions?.invalidParams?.map((p) => p.name).sort()).to.deep.equal(['after', 'limit']);
    const restOnly = await createTestKey(['catalog:read']);
    expect(onlyError(await graphql(served.api, restOnly, EVENTS)).extensions?.code).to.equal('FORBIDDEN');
  });
});
