// keys create | list | revoke
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { createApiKey, listApiKeys, parseScopes, revokeApiKey, SCOPES } from '../auth/api-keys.ts';
import { parseId } from '../kernel/ids.ts';
import { output, table, withDatabase } from './run.ts';
import { positiveInt } from './arguments.ts';

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerKeyCommands(program: Command, config: Config): void {
  const keys = program.command('keys').description('manage API keys (stored only as hashes)');

  keys
    .command('create')
    .description('create a key and print it once')
    .requiredOption('--name <name>', 'who the key is for')
    .option('--scope <scope>', `a scope to grant (repeatable): ${SCOPES.join(', ')}`, collect, [])
    .option('--rate-limit <n>', 'requests per minute for this key on /v1 (default: RATE_LIMIT_PER_MINUTE)')
    .option('--json', 'print JSON only')
    .action(async (opts: { name: string; scope: string[]; rateLimit?: string; json?: boolean }) => {
      const scopes = parseScopes(opts.scope);
      const rateLimit = opts.rateLimit === undefined ? null : positiveInt('--rate-limit', opts.rateLimit);
      const created = await withDatabase(config, (db) =>
        createApiKey(db.orm.em.fork(), { name: opts.name, scopes, rateLimit }),
      );
      const limit = created.rateLimit === null ? '' : ` and a rate limit of ${created.rateLimit} requests per minute`;
      output(opts.json, created, () =>
        [
          `Created key ${created.id} (${created.name}) with scopes ${created.scopes.join(', ')}${limit}.`,
          `Key (shown only now, store it safely):`,
          created.key,
        ].join('\n'),
      );
    });

  keys
    .command('list')
    .description('list keys (never the keys themselves)')
    .option('--json', 'print JSON only')
    .action(async (opts: { json?: boolean }) => {
      const list = await withDatabase(config, (db) => listApiKeys(db.orm.em.fork()));
      output(opts.json, list, () =>
        table(list, ['id', 'name', 'prefix', 'scopes', 'rateLimit', 'createdAt', 'revokedAt']),
      );
    });

  keys
    .command('revoke')
    .description('revoke a key; every API process refuses it within milliseconds')
    .argument('<id>', 'key id (see keys list)')
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { json?: boolean }) => {
      const revoked = await withDatabase(config, (db) => revokeApiKey(db.orm.em.fork(), parseId(id)));
      output(opts.json, revoked, () => `Revoked key ${revoked.id} (${revoked.name}) at ${revoked.revokedAt}.`);
    });
}
