// deliveries dead [--receiver ID] | replay-dead [--receiver ID] [--event ID] [--include-superseded]
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { parseId } from '../kernel/ids.ts';
import { listDeadLetters, replayDeadLetters } from '../webhooks/delivery/redeliver.ts';
import { positiveInt } from './arguments.ts';
import { output, progress, table, withDatabase } from './run.ts';
import { withBoss } from './with-boss.ts';

// `remaining` counts the receiver's (or every) dead letters left, whatever --event picked: with it,
// other events' letters stay too, not only those of disabled receivers.
const remainingWhy = (eventId: string | undefined) =>
  eventId === undefined
    ? ' (those of disabled receivers)'
    : " (other events' letters, and those of disabled receivers)";

const receiverOption = (value: string | undefined) => (value === undefined ? undefined : parseId(value, 'receiver'));

export function registerDeliveryCommands(program: Command, config: Config): void {
  const deliveries = program.command('deliveries').description('webhook deliveries');

  deliveries
    .command('dead')
    .description('list dead-lettered deliveries, oldest first, with their last status code and error')
    .option('--receiver <id>', 'only this receiver')
    .option('--limit <n>', 'at most this many', '1000')
    .option('--json', 'print JSON only')
    .action(async (opts: { receiver?: string; limit: string; json?: boolean }) => {
      const receiverId = receiverOption(opts.receiver);
      const limit = positiveInt('--limit', opts.limit);
      const dead = await withDatabase(config, (db) => listDeadLetters(db.pool, { receiverId, limit }));
      output(opts.json, dead, () =>
        table(dead, [
          'eventId',
          'eventType',
          'receiverId',
          'attempts',
          'lastStatusCode',
          'lastError',
          'lastAttemptAt',
          'deadSince',
        ]),
      );
    });

  deliveries
    .command('replay-dead')
    .description('queue dead letters of enabled receivers again (same event ids); those of disabled receivers stay')
    .option('--receiver <id>', 'only this receiver')
    .option('--event <id>', 'only the dead letters of this event (with --receiver: one letter)')
    .option(
      '--include-superseded',
      'also send letters whose record has a newer delivery to the receiver (delivered or pending), or whose version it already got; by default they are skipped',
    )
    .option('--json', 'print JSON only')
    .action(async (opts: { receiver?: string; event?: string; includeSuperseded?: boolean; json?: boolean }) => {
      const receiverId = receiverOption(opts.receiver);
      const eventId = opts.event === undefined ? undefined : parseId(opts.event, 'event');
      const result = await withDatabase(config, (db) =>
        withBoss(config, db, (boss) =>
          replayDeadLetters(
            { pool: db.pool, boss },
            {
              receiverId,
              eventId,
              includeSuperseded: opts.includeSuperseded,
              onProgress: (n) => progress(`replayed ${n}`),
            },
          ),
        ),
      );
      if (result.replayed && process.stderr.isTTY) process.stderr.write('\n');
      output(
        opts.json,
        result,
        () =>
          `Replayed ${result.replayed} dead letters; ${result.superseded} skipped as superseded (the receiver already got their version or a newer one, or a newer one is pending; --include-superseded sends them); ${result.remaining} remain${remainingWhy(eventId)}.`,
      );
    });
}
