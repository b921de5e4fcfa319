// Which stored events a delivery still needs: the worker loads an event's body from the event table
// when it sends (webhooks/load-targets.ts), so an event referenced by a waiting, retrying or running
// delivery job, or by a dead letter (replayable), must outlive retention. This is the one place
// where retention reads pg-boss's job table; the queues are partitioned by name, so only the two
// webhook queues are read.
import pg from 'pg';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from '../webhooks/queue.ts';

const QUEUES = `(${[DELIVERY_QUEUE, DEAD_LETTER_QUEUE].map((n) => pg.escapeLiteral(n)).join(', ')})`;

/** SQL condition: the event `alias` is referenced by an unsettled delivery job or a dead letter. */
export const eventHeld = (alias: string): string =>
  `exists (select 1 from ${BOSS_SCHEMA}.job j where j.name in ${QUEUES} and j.state in ('created', 'retry', 'active') and j.data->>'eventId' = ${alias}.id::text)`;

/** SQL condition: the attempt `alias` belongs to a delivery that is a dead letter now (its history is kept with it). */
export const attemptOfDeadLetter = (alias: string): string =>
  `exists (select 1 from ${BOSS_SCHEMA}.job j where j.name = ${pg.escapeLiteral(DEAD_LETTER_QUEUE)} and j.state = 'created'
             and j.data->>'eventId' = ${alias}.event_id::text and j.data->>'receiverId' = ${alias}.receiver_id::text)`;

/** SQL for a database where pg-boss never started (no job table): nothing is held. */
export const NOTHING_HELD = 'false';
