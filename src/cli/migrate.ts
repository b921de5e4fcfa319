// migrate: the one command that may create and migrate a database (the service's start does too).
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { openDatabase } from '../app/database.ts';
import { prepareSecrets } from '../webhooks/secrets/seal-secrets.ts';
import { resolveSecretKeyring } from '../webhooks/secrets/secret-keys.ts';
import { cliLogger, output } from './run.ts';

export function registerMigrateCommand(program: Command, config: Config): void {
  program
    .command('migrate')
    .description('create the database if missing and apply pending migrations (the service also does this on start)')
    .option('--json', 'print JSON only')
    .action(async (opts: { json?: boolean }) => {
      const logger = cliLogger(config);
      const db = await openDatabase(config, logger, { schema: 'migrate' });
      try {
        const { applied, newer } = db;
        // Like the service's start: secrets left in plain text by older versions are sealed now.
        await prepareSecrets(db.pool, await resolveSecretKeyring(config, logger), logger);
        const ahead = newer.length
          ? ` The database is ahead of this version: it has ${newer.join(', ')}, which this version does not.`
          : '';
        output(opts.json, { applied, newer }, () =>
          applied.length
            ? `Applied: ${applied.join(', ')}.${ahead}`
            : newer.length
              ? `Nothing to apply.${ahead}`
              : 'Nothing to apply: the database is up to date.',
        );
      } finally {
        await db.close();
      }
    });
}
