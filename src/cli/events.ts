// events redeliver EVENT_ID [--receiver ID]
import type { Command } from 'commander';
import type { Config } from '../config.ts';
import { parseId } from '../catalog/input.ts';
import { redeliverEvent } from '../webhooks/redeliver.ts';
import { output, withDatabase } from './run.ts';
import { withBoss } from './with-boss.ts';

export function registerEventCommands(program: Command, config: Config): void {
  const events = program.command('events').description('stored webhook events');

  events
    .command('redeliver')
    .description('send a stored event again (same id and body, fresh timestamp and signature)')
    .argument('<eventId>', 'event id (x-service-event-id)')
    .option('--receiver <id>', 'only to this receiver (default: every enabled receiver subscribed to the type)')
    .option('--json', 'print JSON only')
    .action(async (eventId: string, opts: { receiver?: string; json?: boolean }) => {
      const id = parseId(eventId, 'eventId');
      const receiverId = opts.receiver === undefined ? undefined : parseId(opts.receiver, 'receiver');
      const result = await withDatabase(config, (db) => withBoss(config, db, (boss) => redeliverEvent({ pool: db.pool, boss }, id, receiverId)));
      output(opts.json, result, () =>
        result.receiverIds.length
          ? `Queued ${result.eventType} ${result.eventId} for ${result.receiverIds.length} receiver(s): ${result.receiverIds.join(', ')}.`
          : `No enabled receiver is subscribed to ${result.eventType}; nothing queued.`,
      );
    });
}
