// Helpers for the operations tests: the webhook queues (pg-boss schema) in the suite's database,
// an API whose log lines are captured, and a scratch database without any of the service's tables.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type { PgBoss } from 'pg-boss';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { createLogger, type Logger } from '../../src/kernel/logger.ts';
import { type Api, startApi } from '../../src/app/service.ts';
import { startBoss } from '../../src/webhooks/queue/boss.ts';
import { testDb } from '../hooks.ts';
import { DEFAULT_CONFIG, silentLogger } from '../support/api.ts';
import { testWebhookConfig } from '../support/webhooks.ts';

/** pg-boss on the suite's database as the service starts it (schema and both webhook queues), without maintenance. */
export async function startTestBoss(): Promise<PgBoss> {
  return await startBoss({ url: testDb().url, config: testWebhookConfig(), logger: silentLogger, supervise: false });
}

/** Makes sure the suite's database has the pg-boss schema that /readyz checks. */
export async function ensureQueueSchema(): Promise<void> {
  const boss = await startTestBoss();
  await boss.stop({ graceful: false, close: true });
}

export type LogCapture = { logger: Logger; lines: () => Record<string, unknown>[]; text: () => string };

/** A pino logger (the service's own configuration, redaction included) writing JSON lines into memory. */
export function captureLogger(level = 'debug'): LogCapture {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      chunks.push(String(chunk));
      callback();
    },
  });
  const logger = createLogger({ level, destination });
  const text = () => chunks.join('');
  const lines = () =>
    text()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, text };
}

/** The real API with the given logger. */
export async function startApiWithLogger(logger: Logger, db: Database = testDb()): Promise<Api> {
  return await startApi(
    {
      port: 0,
      host: '127.0.0.1',
      http: { ...DEFAULT_CONFIG.http, requestTimeoutMs: 10_000 },
      graphql: DEFAULT_CONFIG.graphql,
      rateLimit: DEFAULT_CONFIG.rateLimit,
      keyCache: DEFAULT_CONFIG.keyCache,
      etagCache: DEFAULT_CONFIG.etagCache,
      feed: DEFAULT_CONFIG.feed,
      db: DEFAULT_CONFIG.db,
      query: DEFAULT_CONFIG.query,
    },
    db,
    logger,
  );
}

/**
 * A fresh, empty database on the suite's server (no migrations, no pg-boss), opened as the
 * service opens one; dropped by `drop()`.
 */
export async function openEmptyDatabase(): Promise<{ db: Database; drop: () => Promise<void> }> {
  const name = `lods_empty_${randomBytes(4).toString('hex')}`;
  await testDb().pool.query(`create database ${name}`);
  const url = new URL(testDb().url);
  url.pathname = `/${name}`;
  const db = await connectDatabase(url.toString(), { poolMax: 2, connectTimeoutMs: 500, migrate: false });
  return {
    db,
    drop: async () => {
      await db.close();
      await testDb().pool.query(`drop database if exists ${name} with (force)`);
    },
  };
}
