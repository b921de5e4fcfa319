// `npm run clean`: removes this checkout's embedded PostgreSQL (cluster, password, staged binaries)
// and the files the embedded default keeps in DATA_DIR; see db/clean-embedded.ts. Exit 1 when a
// cluster is in use (nothing removed), 78 on a bad configuration.
import { ConfigError, loadConfig } from '../kernel/config.ts';
import { cleanEmbedded } from '../db/clean-embedded.ts';

try {
  const config = loadConfig();
  process.exitCode = await cleanEmbedded(config.dataDir, (line) => process.stdout.write(`${line}\n`), {
    databaseUrl: config.databaseUrl,
  });
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exitCode = 78;
}
