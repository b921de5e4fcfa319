// /metrics reports how long the oldest write transaction has held the feed's horizon back.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import type { Api } from '../../src/service.ts';
import { testDb } from '../hooks.ts';
import { startTestApi } from '../support/api.ts';

async function horizonAge(api: Api): Promise<number> {
  const text = await (await fetch(`${api.url}/metrics`)).text();
  const line = /^lods_feed_horizon_age_seconds (\S+)$/m.exec(text);
  if (!line) throw new Error('lods_feed_horizon_age_seconds missing');
  return Number(line[1]);
}

describe('feed horizon age metric', () => {
  let api: Api;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.close());

  it('grows while a write transaction stays open and falls back when it ends', async () => {
    const holder = await testDb().pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select pg_current_xact_id()');
      const opened = Date.now();
      await sleep(300); // the age to be measured
      const age = await horizonAge(api);
      expect(age).to.be.at.least(0.29).and.at.most((Date.now() - opened) / 1000 + 0.05);
      await holder.query('commit');
      expect(await horizonAge(api)).to.be.below(0.29);
    } finally {
      holder.release();
    }
  });
});
