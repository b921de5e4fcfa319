// Child process hosting the API for bench:abuse, so that neither the measuring client nor the
// abuser shares its event loop. BENCH_DATABASE_URL names the database; GRAPHQL_BODY_BYTES_PER_SECOND
// (and GRAPHQL_BODY_BURST_BYTES) are read as the service reads them. Reports { url } over IPC.
import { connectDatabase } from '../../src/app/database.ts';
import { startApi } from '../../src/app/service.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import { createLogger } from '../../src/kernel/logger.ts';

const databaseUrl = process.env.BENCH_DATABASE_URL;
if (!databaseUrl || !process.send) throw new Error('server.ts is started by bench/abuse/run.ts');
const db = await connectDatabase(databaseUrl, { poolMax: 10, connectTimeoutMs: 3000, migrate: false });
const { GRAPHQL_BODY_BYTES_PER_SECOND, GRAPHQL_BODY_BURST_BYTES } = process.env;
const api = await startApi(
  { ...loadConfig({ GRAPHQL_BODY_BYTES_PER_SECOND, GRAPHQL_BODY_BURST_BYTES }), port: 0, host: '127.0.0.1' },
  db,
  createLogger({ level: 'silent' }),
);
const stop = () =>
  void api
    .close()
    .then(() => db.close())
    .finally(() => process.exit(0));
process.on('message', (message) => message === 'stop' && stop());
process.on('disconnect', stop);
process.send({ url: api.url });
