// Child process that hosts one server under test, so that the load generator (autocannon, in the
// parent) never competes with it for the same event loop. Usage: server-process.ts service|baseline
// with BENCH_DATABASE_URL set; it reports { url } over IPC and stops on the message 'stop'.
import { loadConfig } from '../../src/kernel/config.ts';
import { connectDatabase } from '../../src/app/database.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { startApi } from '../../src/app/service.ts';
import { startBaseline } from './baseline.ts';

// The service's default DB_POOL_MAX; the baseline gets the same number of connections.
export const POOL_MAX = 10;

async function start(kind: string, databaseUrl: string): Promise<{ url: string; close: () => Promise<void> }> {
  if (kind === 'baseline') return await startBaseline(databaseUrl, POOL_MAX);
  if (kind !== 'service') throw new Error(`unknown server kind "${kind}"`);
  const db = await connectDatabase(databaseUrl, { poolMax: POOL_MAX, connectTimeoutMs: 3000, migrate: false });
  const api = await startApi(
    // Limits on or off (BENCH_RATE_LIMIT=on|off): the bench key's own limit is never reached.
    {
      // The response pace is off (as the rate limits are by default here): the bench's one key asks for more than a consumer's.
      ...loadConfig({ RESPONSE_BYTES_PER_SECOND: '0' }),
      port: 0,
      host: '127.0.0.1',
      rateLimit: { perMinute: process.env.BENCH_RATE_LIMIT === 'on' ? 6000 : 0, syncMs: 1000 },
    },
    db,
    createLogger({ level: 'silent' }),
  );
  return {
    url: api.url,
    close: async () => {
      await api.close();
      await db.close();
    },
  };
}

if (import.meta.main) {
  const databaseUrl = process.env.BENCH_DATABASE_URL;
  if (!databaseUrl || !process.send) throw new Error('server-process.ts is started by bench/read-path/run.ts');
  const server = await start(process.argv[2] ?? '', databaseUrl);
  const stop = () => void server.close().finally(() => process.exit(0));
  process.on('message', (message) => {
    if (message === 'stop') stop();
    if (message === 'gc') {
      const gc = (globalThis as { gc?: () => void }).gc;
      gc?.();
      process.send!({ collected: gc !== undefined });
    }
  });
  process.on('disconnect', stop);
  process.send({ url: server.url });
}
