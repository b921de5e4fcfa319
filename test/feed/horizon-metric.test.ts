// /metrics reports how long the oldest write transaction has held the feed's horizon back.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
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

  it('reports at least the age of a write transaction that stays open', async () => {
    const holder = await testDb().pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select pg_current_xact_id()');
      await sleep(300); // the age to be measured
      // At least as old as ours (the horizon is the cluster's: another database's older transaction,
      // such as a parallel test file's, may be older still).
      expect(await horizonAge(api)).to.be.at.least(0.29);
      await holder.query('commit');
    } finally {
      holder.release();
    }
  });
});
