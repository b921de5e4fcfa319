// A read replica that is never usable says so at once: one unreachable from the start, or a server
// that is no standby (a primary's URL given by mistake). Before, the log said nothing (a warning was
// written only when a replica's health changed, and every replica starts unhealthy), nothing showed it,
// and every read went to the primary.
import { expect } from 'chai';
import { createReadPool } from '../../src/db/read-replicas.ts';
import { testDb } from '../hooks.ts';
import { captureLogger } from '../ops/ops-support.ts';
import { eventually } from '../support/webhooks.ts';

describe('read replicas never usable', () => {
  it('are named in a warning by the first check: unreachable, or not a standby', async () => {
    const log = captureLogger('info');
    const unreachable = 'postgresql://reader:secret@127.0.0.1:1/catalog';
    const reads = createReadPool({
      primary: testDb().pool,
      urls: [unreachable, testDb().url],
      poolMax: 1,
      connectTimeoutMs: 1000,
      maxLagMs: 1000,
      checkMs: 60_000,
      logger: log.logger,
    });
    try {
      const warnings = () => log.lines().filter((l) => l.level === 40 || l.level === 'warn');
      await eventually(async () => warnings().length >= 2, 5000, 'both replicas named');
      const messages = warnings().map((l) => String(l.msg));
      expect(messages).to.include('read replica unreachable: reads go to the primary');
      expect(messages).to.include('read replica is not a standby (not in recovery): reads go to the primary');
      expect(log.text(), 'the password is not logged').not.to.contain('secret');
      expect(reads.status().map((s) => s.healthy)).to.deep.equal([false, false]);
    } finally {
      await reads.close();
    }
  });
});
