// Raw SQL with bound parameters on the connection of a MikroORM transaction (its kysely instance),
// for the statements whose parameters are large (a batch's docs, its events' bodies): MikroORM's own
// `execute` would inline every value into the SQL text, megabytes per batch.
import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';

/** Runs one statement with bound parameters (never inlined into its text) and returns its rows. */
export type RunSql = <R>(text: string, params: readonly unknown[]) => Promise<R[]>;

/** Statements on the transaction of `em`. */
export function sqlOf(em: EntityManager): RunSql {
  return async <R>(text: string, params: readonly unknown[]) =>
    (await em.getKysely().executeQuery<R>(CompiledQuery.raw(text, [...params]))).rows;
}
