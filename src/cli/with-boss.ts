// pg-boss for a command that enqueues deliveries (redeliver, replay): started without maintenance or
// listening, over the command's database, and stopped when the command ends.
import type { PgBoss } from 'pg-boss';
import { loadConfig } from '../config.ts';
import type { Database } from '../database.ts';
import { createLogger } from '../logger.ts';
import { startBoss } from '../webhooks/queue.ts';

export async function withBoss<T>(db: Database, work: (boss: PgBoss) => Promise<T>): Promise<T> {
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn', destination: process.stderr });
  const boss = await startBoss({ url: db.url, config: loadConfig().webhooks, logger, supervise: false, poolMax: 2 });
  try {
    return await work(boss);
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}
