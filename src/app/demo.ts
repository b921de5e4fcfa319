// First-start demo for the embedded database: a seeded catalog and a demo key, kept under DATA_DIR
// so that later starts print the same key. Never used with DATABASE_URL or NODE_ENV=production.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createApiKey, hashKey, lookUpKey, SCOPES } from '../auth/api-keys.ts';
import { seedCatalog } from '../catalog/seed.ts';
import type { Database } from './database.ts';
import type { Logger } from '../kernel/logger.ts';

export async function ensureDemo(
  db: Database,
  options: { dataDir: string; count: number; logger: Logger },
): Promise<string> {
  const keyFile = resolve(options.dataDir, 'demo-key');
  const [{ n }] = (await db.pool.query<{ n: string }>('select sum(n) as n from catalog_count')).rows as [{ n: string }];
  if (Number(n) === 0 && options.count > 0) {
    options.logger.info({ count: options.count }, 'seeding demo catalog');
    await seedCatalog(db.pool, { count: options.count, seed: 42 });
  }
  if (existsSync(keyFile)) {
    const key = (await readFile(keyFile, 'utf8')).trim();
    if (await lookUpKey(db.pool, hashKey(key))) return key;
  }
  const created = await createApiKey(db.orm.em.fork(), { name: 'demo', scopes: [...SCOPES] });
  await writeFile(keyFile, `${created.key}\n`, { mode: 0o600 });
  return created.key;
}
