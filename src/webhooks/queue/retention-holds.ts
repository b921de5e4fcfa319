// What retention must keep for the queue: events that open jobs or dead letters still reference, and
// the attempts of deliveries that are dead letters now.
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, QUEUES_SQL } from './boss.ts';

/**
 * SQL condition: the event `alias` (a row of `event`) is referenced by an unsettled delivery job or a
 * dead letter, i.e. the worker will still load its body (retention keeps it).
 * Raw: a condition inside retention's batched delete; findJobs() reads one queue per call, client-side.
 */
export function eventHeldCondition(alias: string): string {
  return `exists (select 1 from ${BOSS_SCHEMA}.job j where j.name in ${QUEUES_SQL} and j.state in ('created', 'retry', 'active') and j.data->>'eventId' = ${alias}.id::text)`;
}

/**
 * SQL condition: the attempt `alias` (a row of `delivery_attempt`) belongs to a delivery that is a
 * dead letter now (retention keeps its history with it).
 * Raw: a condition inside retention's batched delete, as above.
 */
export function deadLetterAttemptCondition(alias: string): string {
  return `exists (select 1 from ${BOSS_SCHEMA}.job j where j.name = '${DEAD_LETTER_QUEUE}' and j.state = 'created'
             and j.data->>'eventId' = ${alias}.event_id::text and j.data->>'receiverId' = ${alias}.receiver_id::text)`;
}
