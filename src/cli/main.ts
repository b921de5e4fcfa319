#!/usr/bin/env node
// Operator command line: `npm run cli -- <command>`. Each command group lives in its own file and
// registers itself on the program; they share the database opening and output helpers of run.ts.
import { Command, CommanderError } from 'commander';
import { registerCatalogCommands } from './catalog.ts';
import { type Config, ConfigError, loadConfig } from '../kernel/config.ts';
import { registerDeliveryCommands } from './deliveries.ts';
import { registerEventCommands } from './events.ts';
import { registerKeyCommands } from './keys.ts';
import { registerReceiverCommands } from './receivers.ts';
import { registerMigrateCommand } from './migrate.ts';
import { registerPruneCommand } from './prune.ts';
import { registerSyncCommand } from './sync.ts';
import { registerSeedCommand } from './seed.ts';
import { registerWalkCommand } from './walk.ts';
import { describeFailure } from './run.ts';

// Read once, here; every command gets the same validated configuration as the service.
let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(78); // EX_CONFIG, as the service
}

const program = new Command('lods')
  .description('Learning Opportunities Data Service: operator commands')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

registerKeyCommands(program, config);
registerReceiverCommands(program, config);
registerEventCommands(program, config);
registerCatalogCommands(program, config);
registerDeliveryCommands(program, config);
registerSeedCommand(program, config);
registerMigrateCommand(program, config);
registerWalkCommand(program, config);
registerPruneCommand(program, config);
registerSyncCommand(program, config);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : 2);
  const { message, exitCode } = describeFailure(error);
  process.stderr.write(`error: ${message}\n`);
  process.exit(exitCode);
}
