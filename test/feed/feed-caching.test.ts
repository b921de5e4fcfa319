// The change feed under HTTP caching (docs/contract.md, "Caching"; issue 11 item 1): GET/HEAD of a feed page and
// of the head carry a strong ETag and `Cache-Control: private, no-cache`; a held tag gets 304 with
// no body, after the key check; the tag moves exactly when the page's bytes would.
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { getJson } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { collect, head, startFeedApi } from './feed-support.ts';

describe('GET /v1/events caching', () => {
  let api: Api;
  let key: string;
  const get = (path: string, init: RequestInit = {}, withKey = key) => getJson(api, path, withKey, init);
  const held = (etag: string) => ({ headers: { 'if-none-match': etag } });

  before(async () => ({ api, key } = await startFeedApi()));
  after(() => api.close());

  it('answers a page with a strong ETag, 304 for it (GET and HEAD, key first), and a new tag once the page grows', async () => {
    const start = await head(api, key);
    await createRecord(api.writes);
    const { next } = await collect(api, key, start, 1);
    const path = `/v1/events?after=${start}&limit=2`;

    const first = await get(path);
    expect(first.status).to.equal(200);
    expect((first.body as { results: unknown[] }).results).to.have.length(1);
    const etag = first.headers.get('etag')!;
    expect(etag).to.match(/^"[0-9a-f]{32}"$/); // strong (no W/), the format of every /v1 tag
    expect(first.headers.get('cache-control')).to.equal('private, no-cache');

    for (const method of ['GET', 'HEAD']) {
      const again = await get(path, { method, ...held(etag) });
      expect(again.status, method).to.equal(304);
      expect(again.text, method).to.equal('');
      expect(again.headers.get('etag'), method).to.equal(etag);
      expect(again.headers.get('cache-control'), method).to.equal('private, no-cache');
    }
    expect((await get(path, held(`W/${etag}, "other"`))).status, 'weak comparison, one of several').to.equal(304);
    expect((await get(path, held('*'))).status).to.equal(304);
    expect((await get(path, held(etag), 'lods_not_a_key')).status, 'the key comes first').to.equal(401);
    expect((await get(`/v1/events?after=${start}&limit=3`, held(etag))).status, 'another limit, other bytes').to.equal(
      200,
    );

    // The end of the feed: an empty page with its own tag, which holds until an event arrives.
    const endPath = `/v1/events?after=${next}`;
    const end = await get(endPath);
    expect((end.body as { results: unknown[] }).results).to.deep.equal([]);
    expect((await get(endPath, held(end.headers.get('etag')!))).status).to.equal(304);

    await createRecord(api.writes);
    await collect(api, key, next, 1);
    const grown = await get(path, held(etag));
    expect(grown.status, 'a second event joined the page').to.equal(200);
    expect((grown.body as { results: unknown[] }).results).to.have.length(2);
    expect(grown.headers.get('etag')).not.to.equal(etag);
    const endNow = await get(endPath, held(end.headers.get('etag')!));
    expect(endNow.status, 'the empty page is no longer empty').to.equal(200);
    expect((endNow.body as { results: unknown[] }).results).to.have.length(1);
  });

  it('answers the head with a strong ETag, 304 while it stays, a new tag when it moves', async () => {
    const first = await get('/v1/events/head');
    const etag = first.headers.get('etag')!;
    expect(etag).to.match(/^"[0-9a-f]{32}"$/);
    expect(first.headers.get('cache-control')).to.equal('private, no-cache');
    const same = await get('/v1/events/head', held(etag));
    expect([same.status, same.text]).to.deep.equal([304, '']);

    await createRecord(api.writes);
    await collect(api, key, (first.body as { cursor: string }).cursor, 1);
    const moved = await get('/v1/events/head', held(etag));
    expect(moved.status).to.equal(200);
    expect(moved.headers.get('etag'))
      .to.match(/^"[0-9a-f]{32}"$/)
      .and.not.to.equal(etag);
  });
});
