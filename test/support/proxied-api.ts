// The test API over the suite's database reached through a TCP proxy (tcp-proxy.ts) that a test can
// cut, restore, freeze and thaw: the set-up of the tests of a database outage.
import { connectDatabase, type Database } from '../../src/app/database.ts';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { startTestApi, type TestApiOptions } from './api.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

export type ProxiedApi = {
  proxy: TcpProxy;
  /** The suite's database, opened through the proxy. */
  db: Database;
  api: Api;
  /** Lets bytes flow again (thaw, restore), then closes the API, the database and the proxy. */
  close: () => Promise<void>;
};

export type ProxiedApiOptions = {
  /** How the database is opened through the proxy (default: 2 connections, a 500 ms connect timeout). */
  connect?: { poolMax?: number; connectTimeoutMs?: number; statementTimeoutMs?: number };
  /** startTestApi's options (its database is the proxied one). */
  api?: Omit<TestApiOptions, 'db'>;
};

export async function startProxiedApi(options: ProxiedApiOptions = {}): Promise<ProxiedApi> {
  const target = new URL(testDb().url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  let db: Database | null = null;
  try {
    const viaProxy = new URL(target);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    db = await connectDatabase(viaProxy.toString(), {
      poolMax: 2,
      connectTimeoutMs: 500,
      ...options.connect,
      migrate: false,
    });
    const api = await startTestApi({ ...options.api, db });
    const opened = db;
    return {
      proxy,
      db: opened,
      api,
      close: async () => {
        proxy.thaw();
        proxy.restore();
        await api.close();
        await opened.close();
        await proxy.close();
      },
    };
  } catch (error) {
    await db?.close();
    await proxy.close();
    throw error;
  }
}
