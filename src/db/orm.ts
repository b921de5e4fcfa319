// Opens MikroORM on PostgreSQL with every entity listed explicitly, and runs migrations.
import { resolve } from 'node:path';
import { Migrator } from '@mikro-orm/migrations';
import { MikroORM } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { apiKeyEntities } from '../auth/entities.ts';
import { catalogEntities } from '../catalog/entities.ts';
import { eventEntities } from '../events/entities.ts';
import { webhookEntities } from '../webhooks/entities.ts';

export type Orm = MikroORM;

export const MIGRATIONS_DIR = resolve(import.meta.dirname, '../../migrations');

export async function openOrm(options: { url: string; poolMax: number; connectTimeoutMs: number; debug?: boolean }): Promise<Orm> {
  return await MikroORM.init({
    clientUrl: options.url,
    entities: [...catalogEntities, ...apiKeyEntities, ...eventEntities, ...webhookEntities],
    extensions: [Migrator],
    discovery: { warnWhenNoEntities: true },
    pool: { min: 0, max: options.poolMax, idleTimeoutMillis: 30_000 },
    // Fail fast when the database is unreachable (the API answers 503), instead of queueing forever.
    driverOptions: { connectionTimeoutMillis: options.connectTimeoutMs, application_name: 'lods' },
    migrations: {
      path: MIGRATIONS_DIR,
      glob: '!(*.d).ts',
      tableName: 'mikro_orm_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      snapshotOnMigrate: false,
      silent: true,
    },
    debug: options.debug ?? false,
    // A request or job forks its own EntityManager; the global one is never used for work.
    allowGlobalContext: false,
  });
}

/** Applies pending migrations; returns the names of those applied. */
export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((m) => m.name);
}

/** The pg pool behind MikroORM, for the few hot paths written in plain SQL. */
export async function nativePool(orm: Orm): Promise<Pool> {
  return (await orm.em.getConnection().getNativeClient()) as Pool;
}
