// events list [--type T] [--resource ID] [--limit N] | redeliver EVENT_ID [--receiver ID] [--include-superseded]
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { parseId } from '../kernel/ids.ts';
import { EVENT_TYPES } from '../events/derive-event.ts';
import { listStoredEvents } from '../webhooks/delivery/attempt-reads.ts';
import { redeliverEvent } from '../webhooks/delivery/redeliver.ts';
import { WEBHOOK_TEST_EVENT_TYPE } from '../webhooks/delivery/test-event.ts';
import { positiveInt } from './arguments.ts';
import { CliError, output, table, withDatabase } from './run.ts';
import { withBoss } from './with-boss.ts';

export function registerEventCommands(program: Command, config: Config): void {
  const events = program.command('events').description('stored webhook events');

  events
    .command('list')
    .description('stored events, newest first (ids, types, resources, times; not the bodies)')
    .option(
      '--type <type>',
      `only this event type: ${EVENT_TYPES.join(', ')} (or ${WEBHOOK_TEST_EVENT_TYPE}: test events, listed only when asked for)`,
    )
    .option('--resource <id>', 'only events of this learning opportunity')
    .option('--limit <n>', 'at most this many (1..1000)', '50')
    .option('--json', 'print JSON only')
    .action(async (opts: { type?: string; resource?: string; limit: string; json?: boolean }) => {
      // Test events (receivers test) are listed only when asked for: they are not catalog changes.
      const listable: string[] = [...EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE];
      if (opts.type !== undefined && !listable.includes(opts.type))
        throw new CliError(`--type must be one of ${listable.join(', ')}, got "${opts.type}"`, 2);
      const resourceId = opts.resource === undefined ? undefined : parseId(opts.resource, 'resource');
      const limit = positiveInt('--limit', opts.limit, 1000);
      const events = await withDatabase(config, (db) =>
        listStoredEvents(db.pool, { type: opts.type, resourceId, limit }),
      );
      // inFeed false: stored for receivers only (a test event, a LEFT_VIEW, a restatement, a resync's), not a change in the feed.
      output(opts.json, events, () => table(events, ['id', 'type', 'resourceId', 'occurredAt', 'inFeed']));
    });

  events
    .command('redeliver')
    .description('send a stored event again (same id and body, fresh timestamp and signature)')
    .argument('<eventId>', 'event id (x-service-event-id)')
    .option('--receiver <id>', 'only to this receiver (default: every enabled receiver subscribed to the type)')
    .option(
      '--include-superseded',
      'send it even to receivers that already have a newer delivery of the record (delivered or pending)',
    )
    .option('--json', 'print JSON only')
    .action(async (eventId: string, opts: { receiver?: string; includeSuperseded?: boolean; json?: boolean }) => {
      const id = parseId(eventId, 'eventId');
      const receiverId = opts.receiver === undefined ? undefined : parseId(opts.receiver, 'receiver');
      const result = await withDatabase(config, (db) =>
        withBoss(config, db, (boss) =>
          redeliverEvent({ pool: db.pool, boss }, id, receiverId, { includeSuperseded: opts.includeSuperseded }),
        ),
      );
      const considered = result.receiverIds.length + result.superseded;
      output(opts.json, result, () =>
        considered
          ? `Queued ${result.eventType} ${result.eventId} for ${result.receiverIds.length} of ${considered} receiver(s)` +
            (result.receiverIds.length ? `: ${result.receiverIds.join(', ')}` : '') +
            (result.superseded
              ? `; skipped as superseded (a newer delivery of the record; --include-superseded sends it anyway): ${result.supersededReceiverIds.join(', ')}.`
              : '.')
          : `No enabled receiver is subscribed to ${result.eventType}; nothing queued.`,
      );
    });
}
