// Long polls that follow the feed from the same cursor, woken by one commit, share one read of the
// page instead of a statement each (feed/shared-reads.ts): a hundred waiters and two commits a
// second were two hundred reads a second on the pool other keys' plain reads use.
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createRecord } from '../support/factories.ts';
import { recordStatements } from '../support/statement-recorder.ts';
import { feed, head, startFeedApi, until } from './feed-support.ts';

describe('long polls woken together', function () {
  this.timeout(60_000);
  let api: Api;
  let key: string;
  let pageReads = 0;
  let stopRecording: () => void;
  before(async () => {
    stopRecording = recordStatements(testDb().pool, (name) => {
      if (name === 'feed-page') pageReads++;
    });
    ({ api, key } = await startFeedApi({ feedMaxWaiters: 100, feedMaxWaitersPerKey: 100 }));
  });
  after(async () => {
    stopRecording();
    await api.close();
  });

  it('read the page once per wake-up, not once each, and all get the event', async () => {
    const start = await head(api, key);
    const polls = Array.from({ length: 40 }, () => feed(api, key, { after: start, wait: 30 }));
    await until(() => api.feed.waiters.waiting() === 40);
    const before = pageReads;
    const record = await createRecord(api.writes);
    const pages = await Promise.all(polls);
    for (const page of pages) expect(page.results.map((e) => e.resource.id)).to.deep.equal([record.id]);
    // One read per wake-up (more when an older transaction held the event back for a while: each
    // re-check of the horizon that saw it move wakes them once more); 40 before.
    expect(pageReads - before).to.be.within(1, 10);
  });
});
