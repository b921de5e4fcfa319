// One transaction on a pooled client, with pg-boss statements bound to it (`db`).
import type { Pool, PoolClient } from 'pg';
import type { Db } from 'pg-boss';

export async function inTransaction<T>(pool: Pool, work: (client: PoolClient, db: Db) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await work(client, { executeSql: (text, values) => client.query(text, values as unknown[]) });
    await client.query('commit');
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
