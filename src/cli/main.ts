#!/usr/bin/env node
// Operator command line: `npm run cli -- <command>`. Each command group lives in its own file and
// registers itself on the program; they share the database opening and output helpers of run.ts.
import { readdirSync, readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { type Config, ConfigError, loadConfig } from '../kernel/config.ts';
import { describeFailure } from './run.ts';

type Register = (program: Command, config: Config) => void;

// Each command group, loaded only when it runs: a command loads its own group's modules, not every
// group's (pg-boss, the consumer client, the generator...): `keys list` took 0.37 s of CPU, 0.45 before.
// Help, and anything that names no group, loads them all, in this order.
const GROUPS: Record<string, () => Promise<Register>> = {
  keys: async () => (await import('./keys.ts')).registerKeyCommands,
  receivers: async () => (await import('./receivers.ts')).registerReceiverCommands,
  events: async () => (await import('./events.ts')).registerEventCommands,
  catalog: async () => (await import('./catalog.ts')).registerCatalogCommands,
  deliveries: async () => (await import('./deliveries.ts')).registerDeliveryCommands,
  seed: async () => (await import('./seed.ts')).registerSeedCommand,
  migrate: async () => (await import('./migrate.ts')).registerMigrateCommand,
  walk: async () => (await import('./walk.ts')).registerWalkCommand,
  prune: async () => (await import('./prune.ts')).registerPruneCommand,
  sync: async () => (await import('./sync.ts')).registerSyncCommand,
};

// Read once, here; every command gets the same validated configuration as the service.
let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(78); // EX_CONFIG, as the service
}

// The service's version, as its package.json gives it, and the newest migration it has: the package's
// version stays the same from build to build, the migrations do not (`--version`: what an operator
// reports with a problem, and tells an older build from a newer one by in a rolling upgrade).
const { version: packageVersion } = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string };
const newestMigration = readdirSync(new URL('../../migrations', import.meta.url))
  .filter((file) => /^Migration\d+_\w+\.ts$/.test(file))
  .sort()
  .at(-1)
  ?.slice('Migration'.length, -'.ts'.length);
const version = `${packageVersion} (migrations up to ${newestMigration ?? 'none'})`;

const program = new Command('lods')
  .description('Learning Opportunities Data Service: operator commands')
  .version(version, '-V, --version', 'print the version of the service these commands belong to')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

// The command that runs: its options name the inputs its errors speak of (describeFailure).
let running: Command = program;
program.hook('preAction', (_program, action) => {
  running = action;
});

const named = process.argv[2];
const groups = named !== undefined && Object.hasOwn(GROUPS, named) ? [GROUPS[named]!] : Object.values(GROUPS);
for (const register of await Promise.all(groups.map((load) => load()))) register(program, config);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  const options = running.options.flatMap((option) => option.long ?? []);
  const { message, exitCode } = describeFailure(error, options);
  process.stderr.write(`error: ${message}\n`);
  process.exit(exitCode);
}
