// What a database outage writes to the log. The API's folds of the maintained counts run every second:
// while the database was unreachable each logged a warning with a stack every second. Now an outage is
// one warning per fold and one line when it works again, with how many passes failed
// (kernel/outage-log.ts; the worker's fetch and the rate limit's sync log the same way). The LISTEN
// connection's retries back off from 100 ms: a 5 s outage gave 6-7 warnings, now one.
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pg from 'pg';
import { startCountFolder } from '../../src/catalog/count-folder.ts';
import { createListenConnection } from '../../src/db/listen-connection.ts';
import { survivePoolErrors } from '../../src/db/pool-errors.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { eventually } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Line = { level: number; msg: string; failures?: number; err?: unknown };

/** A logger writing into `lines`, and a TCP proxy in front of the suite's database with a URL through it. */
async function outageRig() {
  const lines: Line[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Line);
      done();
    },
  });
  const target = new URL(testDb().url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  const url = new URL(target);
  [url.hostname, url.port] = ['127.0.0.1', String(proxy.port)];
  return { lines, logger: createLogger({ level: 'info', destination }), proxy, url: url.toString() };
}

describe('the LISTEN connection during a database outage', () => {
  it('logs at most two warnings for a 3 s outage, and one line when it listens again', async function () {
    this.timeout(30_000);
    const { lines, logger, proxy, url } = await outageRig();
    let up = 0;
    const connection = createListenConnection({
      url,
      subscribers: [{ channel: 'lods_outage_test', notified: () => {}, listening: (on) => void (on && up++) }],
      logger,
    });
    try {
      await eventually(async () => (up === 1 ? true : undefined), 10_000, 'listening');
      proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      proxy.restore();
      await eventually(async () => (up === 2 ? true : undefined), 15_000, 'listening again');
      const warnings = lines.filter((l) => l.level === 40);
      expect(warnings.length, JSON.stringify(lines)).to.be.within(1, 2);
      expect(lines.filter((l) => l.msg === 'LISTEN connection restored')).to.have.length(1);
    } finally {
      await connection.close();
      await proxy.close();
    }
  });
});

describe('the folds during a database outage', () => {
  it('log one warning each for a 2 s outage, no stack, and one line each when they work again', async function () {
    this.timeout(30_000);
    const { lines, logger, proxy, url } = await outageRig();
    const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 300 });
    // As the service's pools (MikroORM's does the same): a connection cut while a fold holds it is an
    // error of its statement, not an uncaught 'error' of its client (which failed this test once).
    survivePoolErrors(pool);
    const folder = startCountFolder({ pool, logger, everyMs: 100 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      proxy.restore();
      const recovered = await eventually(
        async () => {
          const found = lines.filter((l) => l.msg.endsWith('works again'));
          return found.length === 2 ? found : undefined;
        },
        10_000,
        'both folds said they work again',
      );
      const warnings = lines.filter((l) => l.level === 40);
      expect(
        warnings.map((l) => l.msg.split(';')[0]),
        JSON.stringify(lines),
      ).to.have.members(['folding the maintained counts failed', 'folding the search bitmaps failed']);
      expect(
        warnings.every((l) => l.err === undefined),
        'no stack',
      ).to.equal(true);
      for (const line of recovered) expect(line.failures, line.msg).to.be.above(3);
    } finally {
      await folder.stop();
      await pool.end();
      await proxy.close();
    }
  });
});
