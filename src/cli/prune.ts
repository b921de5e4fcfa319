// prune [--json]: runs the retention prune now (what the hourly job does), with progress on stderr.
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { pruneRetention } from '../retention/prune.ts';
import { output, progress, withDatabase } from './run.ts';

export function registerPruneCommand(program: Command, config: Config): void {
  program
    .command('prune')
    .description(
      'delete delivery attempts and events past DELIVERY_ATTEMPT_RETENTION_DAYS / EVENT_RETENTION_DAYS now (the hourly job does the same)',
    )
    .option('--json', 'print JSON only: { deliveryAttempts, events, eventsKept, batches, ... }')
    .action(async (opts: { json?: boolean }) => {
      const { retention } = config;
      const result = await withDatabase(config, (db) =>
        pruneRetention(db.pool, {
          eventDays: retention.eventDays,
          deliveryAttemptDays: retention.deliveryAttemptDays,
          onProgress: (p) =>
            progress(
              `prune: ${p.deliveryAttempts} delivery attempts, ${p.events} events deleted (${p.batches} batches)`,
            ),
        }),
      );
      if (process.stderr.isTTY) process.stderr.write('\n');
      const summary = {
        ...result,
        eventRetentionDays: retention.eventDays,
        deliveryAttemptRetentionDays: retention.deliveryAttemptDays,
      };
      output(
        opts.json,
        summary,
        () =>
          `Deleted ${result.deliveryAttempts} delivery attempts older than ${retention.deliveryAttemptDays} days and ${result.events} events older than ${retention.eventDays} days` +
          (result.eventsKept ? ` (${result.eventsKept} kept for waiting deliveries or dead letters).` : '.'),
      );
    });
}
