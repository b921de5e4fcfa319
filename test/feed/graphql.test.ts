// events(after, limit) over GraphQL: the same events, bodies and cursors as GET /v1/events.
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, graphql, startTestApi } from '../support/api.ts';
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
  let api: Api;
  let key: string;
  before(async () => {
    api = await startTestApi();
    key = await createTestKey(['graphql:read', 'catalog:read']);
  });
  after(() => api.close());

  it('reads the same page as REST: events, exact bodies, cursors', async () => {
    const start = await head(api, key);
    const a = await createRecord(api.writes);
    const b = await createRecord(api.writes);
    await collect(api, key, start, 2);
    const res = await graphql<EventsData>(api, key, EVENTS, { after: start, limit: 1 });
    expect(res.body.errors).to.equal(undefined);
    const rest = await feed(api, key, { after: start, limit: 1 });
    const page = res.body.data!.events;
    expect(page.pagination).to.deep.equal(rest.pagination);
    expect(page.results.map((e) => e.resourceId)).to.deep.equal([a.id]);
    expect(rest.text).to.contain(`"results":[${page.results[0]!.body}]`);
    expect(page.results[0]).to.deep.include({
      id: rest.results[0]!.id,
      type: 'LEARNING_OPPORTUNITY_PUBLISHED',
      occurredAt: rest.results[0]!.occurredAt,
    });
    const next = await graphql<EventsData>(api, key, EVENTS, { after: page.pagination.next });
    expect(next.body.data!.events.results.map((e) => e.resourceId)).to.deep.equal([b.id]);
    expect(next.body.data!.events.pagination.hasMore).to.equal(false);
  });

  it('names a bad argument, and needs graphql:read', async () => {
    const bad = onlyError(await graphql(api, key, EVENTS, { after: 'nope', limit: 1001 }));
    expect(bad.extensions?.code).to.equal('BAD_USER_INPUT');
    expect(bad.extensions?.invalidParams?.map((p) => p.name).sort()).to.deep.equal(['after', 'limit']);
    const restOnly = await createTestKey(['catalog:read']);
    expect(onlyError(await graphql(api, restOnly, EVENTS)).extensions?.code).to.equal('FORBIDDEN');
  });
});
