// pg-boss's errors while the database is unreachable: one warning for the outage, not one error line
// per failed pass, and a line when it is over; other errors stay errors.
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '../../src/kernel/logger.ts';
import { isDatabaseUnavailable } from '../../src/kernel/errors.ts';
import { createBossErrorLog } from '../../src/webhooks/queue/boss-errors.ts';
import { listenForDeliveries, startBoss } from '../../src/webhooks/queue/boss.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { eventually, testWebhookConfig } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), lines };
}
const WARN = 40;
const ERROR = 50;

describe('pg-boss errors during a database outage', () => {
  it('logs one warning for a 5 s outage of a supervising pg-boss, no error line, and says when it is over', async function () {
    this.timeout(30_000);
    const target = new URL(testDb().url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const url = new URL(target);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const { logger, lines } = capturingLogger();
    // Expiry 3 s: supervision and monitoring pass every 2 s, as often as pg-boss allows here.
    const boss = await startBoss({
      url: url.toString(),
      config: testWebhookConfig({ timeoutMs: 100 }),
      logger,
      supervise: true,
    });
    try {
      proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 5000));
      proxy.restore();
      const warnings = lines.filter((l) => l.level === WARN && l.msg.startsWith('pg-boss cannot reach the database'));
      expect(warnings, JSON.stringify(lines)).to.have.length(1);
      expect(
        lines.filter((l) => l.level >= ERROR),
        JSON.stringify(lines),
      ).to.deep.equal([]);
    } finally {
      await boss.stop({ graceful: false, close: true });
      await proxy.close();
    }
    const ended = await eventually(
      async () => lines.find((l) => l.msg.startsWith('pg-boss stopped while')),
      5000,
      'the outage reported as over',
    );
    expect((ended as unknown as { errors: number }).errors, 'several errors, one line').to.be.at.least(2);
  });

  it('counts what its LISTEN connection reports when the database goes (heartbeat timed out, connection ended) in the one outage warning, no error line', async function () {
    this.timeout(30_000);
    const target = new URL(testDb().url);
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const url = new URL(target);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const { logger, lines } = capturingLogger();
    // A worker's pg-boss: supervising, and listening for new deliveries on its own connection.
    const boss = await startBoss({
      url: url.toString(),
      config: testWebhookConfig({ timeoutMs: 100 }),
      logger,
      supervise: true,
    });
    const listener = await listenForDeliveries(boss, () => {});
    try {
      expect(listener, 'pg-boss LISTEN connection').to.not.equal(null);
      proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 5000));
      proxy.restore();
      expect(
        lines.filter((l) => l.level >= ERROR),
        JSON.stringify(lines),
      ).to.deep.equal([]);
      expect(
        lines.filter((l) => l.level === WARN && l.msg.startsWith('pg-boss cannot reach the database')),
        JSON.stringify(lines),
      ).to.have.length(1);
    } finally {
      await listener?.close();
      await boss.stop({ graceful: false, close: true });
      await proxy.close();
    }
    // A frozen database (no reset: the listener's heartbeat times out) is the same outage.
    const frozen = capturingLogger();
    const frozenLog = createBossErrorLog(frozen.logger, 50);
    frozenLog.onError(new Error('LISTEN/NOTIFY heartbeat timed out'));
    frozenLog.onError(new Error('LISTEN/NOTIFY connection ended'));
    frozenLog.close();
    expect(frozen.lines.map((l) => l.level)).to.deep.equal([WARN, 30]);
  });

  it('ends an outage after a quiet spell, and keeps other errors as errors', async () => {
    const { logger, lines } = capturingLogger();
    const log = createBossErrorLog(logger, 50);
    log.onError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }));
    log.onError(new Error('Connection terminated unexpectedly'));
    log.onError(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }));
    log.onError(Object.assign(new Error('relation "pgboss.job" does not exist'), { code: '42P01' }));
    await eventually(
      async () => lines.some((l) => l.msg.startsWith('pg-boss errors stopped')),
      2000,
      'the outage ended',
    );
    expect(lines.map((l) => [l.level, l.msg.split(/[:;]/)[0]])).to.deep.equal([
      [WARN, 'pg-boss cannot reach the database'],
      [ERROR, 'pg-boss error'],
      [30, 'pg-boss errors stopped'],
    ]);
    expect(isDatabaseUnavailable(Object.assign(new Error('x'), { code: '23505' }))).to.equal(false);
  });
});
