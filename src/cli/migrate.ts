// migrate
import type { Command } from 'commander';
import { migrate } from '../db/orm.ts';
import { loadConfig } from '../config.ts';
import { openDatabase } from '../database.ts';
import { createLogger } from '../logger.ts';
import { prepareSecrets } from '../webhooks/seal-secrets.ts';
import { resolveSecretKeyring } from '../webhooks/secret-keys.ts';
import { output } from './run.ts';

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('apply pending database migrations (the service also does this on start)')
    .option('--json', 'print JSON only')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      const logger = createLogger({ level: 'warn', destination: process.stderr });
      const db = await openDatabase(config, logger, { migrate: false });
      try {
        const applied = await migrate(db.orm);
        // Like the service's start: secrets left in plain text by older versions are sealed now.
        await prepareSecrets(db.pool, await resolveSecretKeyring(config, logger), logger);
        output(opts.json, { applied }, () => (applied.length ? `Applied: ${applied.join(', ')}` : 'Nothing to apply: the database is up to date.'));
      } finally {
        await db.close();
      }
    });
}
