// A view's feed page scans up to VIEW_SCAN_MAX events for its filter: a read whose cost the consumer
// chooses, admitted as the query class is (QUERY_MAX_CONCURRENT_PER_KEY, QUERY_MAX_CONCURRENT) though
// it runs on the main pool. Seen from outside before: two keys sending view pages on 12 connections
// each held 9 of the main pool's 10 connections, and another key's GET by id went from 5 to 362 ms
// (p99 1.4 s). The pages are held in the database by a lock on the event log, so each admitted one
// provably holds its slot for as long as the test says.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { testDb } from '../hooks.ts';
import { getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';

describe('the pages of a view’s feed are admitted as the query class', function () {
  this.timeout(30_000);
  const served = useTestApi({ hog: ['catalog:read'], other: ['catalog:read'] }, { query: { queueWaitMs: 500 } });

  it("one key's view pages beyond its two slots wait, then get 429; another key's reads are answered meanwhile", async () => {
    const { api } = served;
    const id = (await createRecord(api.writes)).id;
    const view = encodeURIComponent('format=ONLINE,HYBRID&country=de');
    const page = `/v1/events?view=${view}&limit=100`;
    for (const key of [served.hog, served.other]) expect((await getJson(api, page, key)).status).to.equal(200);

    const locker = new pg.Client({ connectionString: testDb().url });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table event in access exclusive mode');
      const hog = Array.from({ length: 6 }, () => getJson(api, page, served.hog));
      await sleep(800); // the four beyond the key's two slots have waited out the line (500 ms)
      const started = performance.now();
      const other = await getJson(api, `/v1/learning-opportunities/${id}`, served.other);
      const otherMs = performance.now() - started;
      await locker.query('commit');
      const answers = await Promise.all(hog);

      expect(other.status, other.text).to.equal(200);
      expect(otherMs, 'another key found a connection at once').to.be.below(1000);
      expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 200, 429, 429, 429, 429]);
      const refused = answers.find((a) => a.status === 429)!;
      expect(expectProblem(refused, 429).detail).to.include('QUERY_MAX_CONCURRENT_PER_KEY');
      expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
    } finally {
      await locker.end();
    }
    // Nothing is left held: the key reads its view again at once.
    expect((await getJson(api, page, served.hog)).status).to.equal(200);
  });

  it("a long poll sharing another key's read of the view is not refused for that key's slots", async () => {
    const { api } = served;
    const view = encodeURIComponent('format=ONLINE&country=fr');
    const page = `/v1/events?view=${view}&limit=100`;
    const locker = new pg.Client({ connectionString: testDb().url });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table event in access exclusive mode');
      // The hog holds its two slots; its long poll starts the shared read and is refused a slot.
      const held = [getJson(api, page, served.hog), getJson(api, page, served.hog)];
      await sleep(200);
      const hogPoll = getJson(api, `${page}&wait=2`, served.hog);
      await sleep(50);
      const otherPoll = getJson(api, `${page}&wait=2`, served.other);
      await sleep(800); // the hog's long poll has waited out its line (500 ms)
      await locker.query('commit');
      const [hogAnswer, otherAnswer] = await Promise.all([hogPoll, otherPoll, ...held]);
      expect(hogAnswer.status, 'the hog itself is refused').to.equal(429);
      expect(otherAnswer.status, otherAnswer.text).to.equal(200);
    } finally {
      await locker.end();
    }
  });
});
