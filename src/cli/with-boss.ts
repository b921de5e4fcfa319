// pg-boss for a command that enqueues deliveries (redeliver, replay): started without maintenance or
// listening, over the command's database, and stopped when the command ends.
import type { PgBoss } from 'pg-boss';
import type { Config } from '../kernel/config.ts';
import type { Database } from '../app/database.ts';
import { startBoss } from '../webhooks/queue/boss.ts';
import { cliLogger } from './run.ts';

export async function withBoss<T>(config: Config, db: Database, work: (boss: PgBoss) => Promise<T>): Promise<T> {
  const boss = await startBoss({
    url: db.url,
    config: config.webhooks,
    logger: cliLogger(config),
    supervise: false,
    poolMax: 2,
  });
  try {
    return await work(boss);
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}
